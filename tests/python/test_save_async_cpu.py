# SPDX-License-Identifier: Apache-2.0
"""save_checkpoint(blocking=False): the handle, what is captured when the call
returns (copy=True: later changes to the tensors are not saved), errors
surfacing at wait(), one save at a time per directory, refusals at the call.
Writes are held back through the save's seam (_save_io.IO) where a test needs
a save in flight, so nothing depends on timing."""
from __future__ import annotations

import errno
import os
import threading

import pytest
import torch

import save_checks
from ufile.safetensors import _save_io, save_checkpoint
from ufile.safetensors._save_async import SaveHandle


class GatedIO(_save_io.SaveIO):
    """Holds every write until ``gate`` is set; fails writes with ``err``."""

    def __init__(self, err: int = 0):
        self.gate, self.entered, self.err = threading.Event(), threading.Event(), err

    def write(self, f, buf, size, file_offset, buf_offset):
        self.entered.set()
        if not self.gate.wait(60):
            raise OSError(errno.ETIMEDOUT, "test gate never opened")
        if self.err:
            raise OSError(self.err, os.strerror(self.err))
        return super().write(f, buf, size, file_offset, buf_offset)


@pytest.fixture
def gated():
    io = GatedIO()
    _save_io.IO = io
    yield io
    io.gate.set()
    _save_io.IO = _save_io.SaveIO()


def _sd(value: float = 1.0) -> dict:
    return {f"layers.{i}.w": torch.full((300 + i,), value + i) for i in range(6)}


def test_copy_captures_the_values_at_the_call(io_dir, gated):
    sd = _sd()
    want = save_checks.of_state_dict(sd)
    h = save_checkpoint(sd, io_dir, max_shard_size=4000, blocking=False)
    assert isinstance(h, SaveHandle)
    assert gated.entered.wait(30)
    for t in sd.values():  # training continues: the tensors change
        t.add_(100)
    assert not h.done()
    gated.gate.set()
    h.wait()
    assert h.done() and set(h.times) == {"captured", "written", "durable"}
    assert h.times["captured"] <= h.times["written"] <= h.times["durable"]
    assert save_checks.which(io_dir, {"saved": want}) == ["saved", "saved"]


def test_no_copy_reads_the_tensors_in_place(io_dir):
    sd = _sd(3.0)
    h = save_checkpoint(sd, io_dir, max_shard_size=4000, blocking=False, copy=False)
    h.wait()
    assert save_checks.which(io_dir, {"saved": save_checks.of_state_dict(sd)}) == \
        ["saved", "saved"]


def test_errors_surface_at_wait(io_dir):
    save_checkpoint(_sd(1.0), io_dir, max_shard_size=4000)
    before = save_checks.of_state_dict(_sd(1.0))
    io = GatedIO(errno.ENOSPC)
    io.gate.set()
    _save_io.IO = io
    try:
        h = save_checkpoint(_sd(2.0), io_dir, max_shard_size=4000, blocking=False)
        for _ in range(2):  # every wait raises it
            with pytest.raises(OSError) as got:
                h.wait()
            assert got.value.errno == errno.ENOSPC and str(io_dir) in str(got.value)
        assert isinstance(h.exception(), OSError)
    finally:
        _save_io.IO = _save_io.SaveIO()
    assert save_checks.which(io_dir, {"before": before}) == ["before", "before"]
    save_checkpoint(_sd(2.0), io_dir, max_shard_size=4000)  # the directory is free again


def test_one_save_at_a_time(io_dir, gated):
    h = save_checkpoint(_sd(), io_dir, blocking=False)
    assert gated.entered.wait(30)
    with pytest.raises(BlockingIOError, match="another save"):
        save_checkpoint(_sd(), io_dir, blocking=False)
    with pytest.raises(TimeoutError):
        h.wait(timeout=0.01)
    gated.gate.set()
    h.wait()
    save_checkpoint(_sd(5.0), io_dir)


def test_refusal_at_the_call(io_dir):
    with pytest.raises(ValueError, match="non contiguous"):
        save_checkpoint({"a": torch.zeros(4, 3).T}, io_dir, blocking=False)
    save_checkpoint(_sd(), io_dir, blocking=False).wait()  # not locked by the refusal


def test_copy_modes(io_dir):
    sd = _sd(4.0)
    h = save_checkpoint(sd, io_dir, blocking=False, copy="device")  # CPU tensors: copied
    for t in sd.values():
        t.add_(1)
    h.wait()
    assert save_checks.which(io_dir, {"saved": save_checks.of_state_dict(_sd(4.0))}) == \
        ["saved", "saved"]
    with pytest.raises(ValueError, match="copy must be"):
        save_checkpoint(sd, io_dir, blocking=False, copy="gpu")
