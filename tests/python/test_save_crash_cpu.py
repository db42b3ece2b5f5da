# SPDX-License-Identifier: Apache-2.0
"""Crash safety of save_checkpoint and save_file: every file-system call of a
small save failed in turn (ENOSPC, EIO, EROFS injected through the save's
seam, _save_io.IO: ufile's own SysOps seam is not reachable from Python), each
followed by a check that the directory holds the previous checkpoint or the
new one, byte for byte, for both kinds of loader; the next save then leaves a
tidy directory. Also: a real EFBIG from the kernel through cuFileWrite
(RLIMIT_FSIZE), a read-only directory, two saves into one directory, and the
SIGKILL loop (save_kill_loop.py, 200 kills)."""
from __future__ import annotations

import errno
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import save_checks
from ufile.safetensors import _save_io, save_checkpoint, save_file
from ufile.safetensors._save_commit import BACKUP_MARK, locked
from ufile.safetensors._save_write import TEMP_MARK

HERE = os.path.dirname(os.path.abspath(__file__))
OPS = ("open", "allocate", "write", "fsync", "fsync_dir", "rename", "link", "unlink",
       "write_small")
ERRNOS = {"open": (errno.EROFS,), "allocate": (errno.ENOSPC,),
          "write": (errno.ENOSPC, errno.EIO), "fsync": (errno.EIO,),
          "fsync_dir": (errno.EIO,), "rename": (errno.EIO,), "link": (errno.EIO,),
          "unlink": (errno.EIO,), "write_small": (errno.ENOSPC,)}


class CountingIO(_save_io.SaveIO):
    """Counts calls; fails the k-th call of ``op`` with ``err``."""

    def __init__(self, op: str | None = None, k: int = 0, err: int = 0):
        self.op, self.k, self.err = op, k, err
        self.calls = {o: 0 for o in OPS}

    def _check(self, op: str) -> None:
        self.calls[op] += 1
        if op == self.op and self.calls[op] == self.k:
            raise OSError(self.err, os.strerror(self.err))


def _wrap(op: str):
    def call(self, *args):
        self._check(op)
        return getattr(_save_io.SaveIO, op)(self, *args)
    return call


for _op in OPS:
    setattr(CountingIO, _op, _wrap(_op))


def _sd(n: int, size: int, seed: int) -> dict:
    rng = np.random.RandomState(seed)
    return {f"model.layers.{i}.weight": torch.from_numpy(rng.randint(0, 255, size + i,
                                                                     dtype=np.uint8))
            for i in range(n)}


# (previous checkpoint or None, new checkpoint), each (state dict, max_shard_size)
A3, B3 = (_sd(6, 3000, 1), 6500), (_sd(6, 3000, 2), 6500)  # 3 shards, the same names
ONE, TWO = (_sd(4, 2000, 3), 10**9), (_sd(5, 4000, 4), 10000)
SCENARIOS = {"new": (None, A3), "sharded_same_names": (A3, B3), "sharded_fewer": (A3, TWO),
             "one_to_sharded": (ONE, A3), "sharded_to_one": (A3, ONE), "one_to_one": (ONE, ONE),
             "lost_index_same_names": (A3, B3), "lost_index_to_one": (A3, ONE),
             "corrupt_index_same_names": (A3, B3)}
# What is done to the previous checkpoint after it is saved: its index deleted
# (a loader then scans the shards) or overwritten with garbage (nothing loads).
MANGLE = {"lost_index_same_names": "delete", "lost_index_to_one": "delete",
          "corrupt_index_same_names": "corrupt"}


@pytest.fixture
def real_io():
    yield
    _save_io.IO = _save_io.SaveIO()


def _prepare(d: str, old, mangle: str | None = None) -> dict:
    """The previous checkpoint in ``d``; the snapshots a loader may see of it."""
    if old is None:
        os.makedirs(d)
        return {}
    save_checkpoint(old[0], d, max_shard_size=old[1])
    index = os.path.join(d, "model.safetensors.index.json")
    if mangle == "delete":
        os.unlink(index)
    elif mangle == "corrupt":  # nothing loads; a save may make the shards whole again
        open(index, "w").write("{not json")
    return {"old": save_checks.of_state_dict(old[0])}


_COUNTS: dict = {}


def _calls(tmp: str, scenario: str) -> dict:
    """The seam calls a clean save of ``scenario`` makes (counted once)."""
    if scenario in _COUNTS:
        return _COUNTS[scenario]
    old, new = SCENARIOS[scenario]
    d = os.path.join(tmp, "count")
    _prepare(d, old, MANGLE.get(scenario))
    io = CountingIO()
    _save_io.IO = io
    save_checkpoint(new[0], d, max_shard_size=new[1])
    _save_io.IO = _save_io.SaveIO()
    _COUNTS[scenario] = io.calls
    return io.calls


def _cases():
    for scenario in SCENARIOS:
        for op in OPS:
            for err in ERRNOS[op]:
                yield scenario, op, err


@pytest.mark.parametrize("scenario,op,err", list(_cases()))
def test_every_call_failing(io_dir, real_io, scenario, op, err):
    old, new = SCENARIOS[scenario]
    calls = _calls(str(io_dir), scenario)
    if calls[op] == 0:
        pytest.skip(f"skipped, because a {scenario} save makes no {op} call")
    new_snap = save_checks.of_state_dict(new[0])
    for k in range(1, calls[op] + 1):
        d = os.path.join(io_dir, f"{op}-{k}")
        candidates = _prepare(d, old, MANGLE.get(scenario))
        loadable_before = bool(candidates) and MANGLE.get(scenario) != "corrupt"
        candidates["new"] = new_snap
        _save_io.IO = CountingIO(op, k, err)
        with pytest.raises(OSError) as got:
            save_checkpoint(new[0], d, max_shard_size=new[1])
        _save_io.IO = _save_io.SaveIO()
        assert got.value.errno == err, got.value
        assert d in str(got.value), f"the error does not name the checkpoint: {got.value}"
        visible = [f for f in os.listdir(d) if not f.startswith(".")]
        if loadable_before:
            save_checks.which(d, candidates)
        elif visible:  # nothing loadable before: nothing, the new one, or a loud refusal
            try:
                save_checks.which(d, candidates)
            except save_checks.Missing:
                pass
            except save_checks.Broken as exc:  # the garbage index, untouched
                assert "index:" in str(exc), exc
        left = [f for f in os.listdir(d) if TEMP_MARK in f]
        assert not left or op == "unlink", f"{op} #{k}: temporary files left: {left}"
        save_checkpoint(new[0], d, max_shard_size=new[1])  # the next save tidies up
        assert save_checks.which(d, {"new": new_snap}) == ["new", "new"]
        names = os.listdir(d)
        assert not [f for f in names if TEMP_MARK in f or BACKUP_MARK in f], names


def test_save_file_failing_leaves_the_previous_file(io_dir, real_io):
    path = os.path.join(io_dir, "w.safetensors")
    save_file({"a": torch.zeros(1000)}, path)
    before = open(path, "rb").read()
    for op in ("open", "allocate", "write", "fsync", "rename"):
        _save_io.IO = CountingIO(op, 1, errno.ENOSPC)
        with pytest.raises(OSError) as got:
            save_file({"a": torch.ones(1000)}, path)
        assert got.value.errno == errno.ENOSPC and got.value.filename == path
        assert open(path, "rb").read() == before
        assert os.listdir(io_dir) == ["w.safetensors"]
    _save_io.IO = _save_io.SaveIO()


def test_kernel_efbig_through_cufilewrite(io_dir):
    io_dir = str(io_dir)
    """RLIMIT_FSIZE makes the kernel refuse the write itself (EFBIG)."""
    code = f"""
import os, resource, signal, sys, torch
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from ufile.safetensors import _save_io, save_file, save_checkpoint
_save_io.IO.allocate = lambda fd, size: None  # no reservation: the write itself fails
p = os.path.join({io_dir!r}, "big.safetensors")
save_file({{"a": torch.zeros(10)}}, p)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
for call in (lambda: save_file({{"a": torch.ones(1 << 19)}}, p),
             lambda: save_checkpoint({{"a": torch.ones(1 << 19)}}, {io_dir!r} + "/ck")):
    try:
        call()
        sys.exit("no error")
    except OSError as exc:
        print(exc.errno, exc)
        assert exc.errno == 27 and "writing tensor 'a'" in str(exc), exc
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(os.listdir(io_dir)) == ["big.safetensors", "ck"]
    assert os.listdir(os.path.join(io_dir, "ck")) == []


def _read_only(d: str):
    """Makes directory ``d`` refuse new entries; returns the undo, or None
    where this process cannot (root ignores modes: it sets the immutable
    attribute instead, where chattr and the file system allow it)."""
    if os.geteuid() != 0:
        os.chmod(d, 0o555)
        return lambda: os.chmod(d, 0o755)
    try:
        subprocess.run(["chattr", "+i", d], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return lambda: subprocess.run(["chattr", "-i", d], check=True, timeout=30)


def test_read_only_directory(io_dir):
    d = os.path.join(io_dir, "ro")
    save_checkpoint(A3[0], d, max_shard_size=A3[1])
    undo = _read_only(d)
    if undo is None:
        pytest.skip("skipped, because this root process cannot make a directory read-only "
                    "(no chattr +i here; the EROFS rows inject the refusal instead)")
    try:
        with pytest.raises(PermissionError) as got:
            save_checkpoint(B3[0], d, max_shard_size=B3[1])
        assert d in str(got.value)
    finally:
        undo()
    assert save_checks.which(d, {"old": save_checks.of_state_dict(A3[0])}) == ["old", "old"]


def test_one_save_at_a_time(io_dir):
    with locked(io_dir):
        with pytest.raises(BlockingIOError, match="another save"):
            save_checkpoint(ONE[0], io_dir)
    save_checkpoint(ONE[0], io_dir)


def test_kill_loop(io_dir):
    """200 SIGKILLs at random points of saves (save_kill_loop.py)."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "save_kill_loop.py"),
                          "--dir", os.path.join(io_dir, "k"), "--kills", "200"],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    print(out.stdout)
