# SPDX-License-Identifier: Apache-2.0
"""ufile.File and registered buffers used as a careless or hostile caller
would: deregistering during a read, resizing a registered tensor, dropping
a registered Buffer, closing a File's descriptor behind its back, offsets
that do not fit in 64 bits, arguments of the wrong type. Each must end in a
clear exception, never in memory written after it was freed or another
file's descriptor closed."""
from __future__ import annotations

import gc
import os
import threading
import warnings

import numpy as np
import pytest
import torch

import ufile
from ufile import _lib


@pytest.fixture
def data(io_dir):
    raw = np.random.default_rng(5).integers(0, 256, 1 << 20, dtype=np.uint8)
    path = str(io_dir / "f.bin")
    raw.tofile(path)
    return path, raw


def test_deregister_refuses_while_a_read_uses_the_buffer(data, monkeypatch):
    """A read in flight holds its Buffer: deregister_buffer raises BufferError
    and changes nothing; once the future is done it succeeds."""
    path, raw = data
    lib, started, go = _lib.lib(), threading.Event(), threading.Event()
    real_read = lib.cuFileRead

    def held_read(*args):
        started.set()
        assert go.wait(60)
        return real_read(*args)

    a = bytearray(4096)
    reg = ufile.register_buffer(a)
    with ufile.File(path) as f:
        monkeypatch.setattr(lib, "cuFileRead", held_read)
        fut = f.read_into_async(reg)
        try:
            assert started.wait(60)
            with pytest.raises(BufferError, match="in use by 1 I/O"):
                ufile.deregister_buffer(reg)
            assert not reg.released
        finally:
            go.set()
        assert fut.result(timeout=60) == 4096
        monkeypatch.undo()
    assert bytes(a) == raw[:4096].tobytes()
    ufile.deregister_buffer(reg)
    assert reg.released


def test_a_queued_read_holds_its_buffer(data):
    """Held from the call, not from when a pool thread starts it."""
    path, _ = data
    reg = ufile.register_buffer(bytearray(4096))
    with ufile.File(path) as f:
        futs = [f.read_into_async(reg) for _ in range(64)]
        refused = 0
        try:
            ufile.deregister_buffer(reg)
        except BufferError:
            refused = 1
        assert [x.result(timeout=60) for x in futs] == [4096] * 64
        assert refused or all(x.done() for x in futs)
    if not reg.released:
        ufile.deregister_buffer(reg)


@pytest.mark.parametrize("change", ["grown", "shrunk"])
def test_a_resized_registered_tensor_is_refused(data, change):
    path, _ = data
    t = torch.zeros(1 << 16, dtype=torch.uint8)
    reg = ufile.register_buffer(t)
    t.resize_(1 << 24 if change == "grown" else 16)
    assert (t.data_ptr() != reg.ptr) == (change == "grown")
    with ufile.File(path) as f:
        with pytest.raises(ValueError, match="moved or shrank"):
            f.read_into(reg)
        with pytest.raises(ValueError, match="moved or shrank"):
            f.read_into_async(reg).result(timeout=60)
    ufile.deregister_buffer(reg)


def test_a_refused_registration_keeps_the_callers_buffer():
    a = bytearray(4096)
    reg = ufile.register_buffer(a)
    with pytest.raises(ufile.CuFileError) as err:
        ufile.register_buffer(reg)
    assert err.value.name == "CU_FILE_MEMORY_ALREADY_REGISTERED"
    assert not reg.released
    with pytest.raises(BufferError):
        a.extend(b"x")  # still exported: its base stays registered and valid
    ufile.deregister_buffer(reg)
    a.extend(b"x")


def test_a_dropped_buffer_is_deregistered_and_unpinned():
    a = bytearray(4096)
    reg = ufile.register_buffer(a)
    del reg
    gc.collect()
    a.extend(b"x")  # no export left
    a.pop()
    again = ufile.register_buffer(a)  # the old registration is gone
    ufile.deregister_buffer(again)


def test_close_leaves_a_reused_descriptor_alone(data, io_dir):
    """The application closed a File's descriptor and the number went to
    another file: close() and the finalizer leave that file open."""
    path, _ = data
    other = str(io_dir / "other.bin")
    with open(other, "wb") as f:
        f.write(b"other")
    f = ufile.File(path)
    fd = f.fileno()
    os.close(fd)
    reused = os.open(other, os.O_RDONLY)
    try:
        assert reused == fd
        with pytest.warns(RuntimeWarning, match=f"fd {fd} of .* was closed outside"):
            f.close()
        assert os.pread(reused, 5, 0) == b"other"
        del f
        gc.collect()
        assert os.pread(reused, 5, 0) == b"other"
    finally:
        os.close(reused)


@pytest.mark.parametrize("kwargs", [dict(file_offset=2**64), dict(file_offset=2**64 + 5),
                                    dict(file_offset=2**63), dict(size=2**64),
                                    dict(buf_offset=2**64), dict(file_offset=-1),
                                    dict(size=-1)])
def test_offsets_and_sizes_that_do_not_fit_are_refused(data, kwargs):
    path, raw = data
    with ufile.File(path, "r+") as f:
        for call in (f.write_from, f.write_from_async, f.read_into, f.read_into_async):
            with warnings.catch_warnings(), pytest.raises(ValueError, match="outside"):
                call(bytearray(b"EVIL"), **kwargs)
    assert np.array_equal(np.fromfile(path, np.uint8), raw)


def test_arguments_of_the_wrong_type_are_named(data):
    path, _ = data
    with ufile.File(path) as f:
        with pytest.raises(TypeError, match=r"size must be an int, not float \(1.5\)"):
            f.read_into(bytearray(4), size=1.5)
        with pytest.raises(TypeError, match="file_offset must be an int, not str"):
            f.read_into(bytearray(4), file_offset="0")
        assert f.read_into(bytearray(4), size=np.int64(4), file_offset=np.uint32(1)) == 4
    with pytest.raises(TypeError, match="takes the Buffer that register_buffer returned, "
                                        "not a bytearray"):
        ufile.deregister_buffer(bytearray(16))
