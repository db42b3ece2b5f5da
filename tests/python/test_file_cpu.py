# SPDX-License-Identifier: Apache-2.0
"""ufile.File with host memory: numpy, CPU torch, bytearray, bytes, DLPack;
offsets, futures, errors naming the cuFile status and the path. Files live
under $UFILE_TEST_TMPDIR when it is set (the filesystem O_DIRECT is tested on)."""
from __future__ import annotations

import errno
import fcntl
import gc
import os
import re
import shutil
import stat
import subprocess
import sys
import weakref

import numpy as np
import pytest
import torch

import ufile
from fs_support import deadline, need_odirect, odirect_works, opened_direct


@pytest.fixture
def data(io_dir):
    rng = np.random.default_rng(11)
    raw = rng.integers(0, 256, 3 << 20, dtype=np.uint8)
    path = str(io_dir / "f.bin")
    raw.tofile(path)
    return path, raw


@pytest.mark.parametrize("direct", [False, True])
def test_read_into_numpy_torch_bytearray(data, direct):
    path, raw = data
    if direct:
        need_odirect(os.path.dirname(path))
    with ufile.File(path, "r", direct=direct) as f:
        assert f.direct is direct and opened_direct(f) is direct
        a = np.zeros(raw.size, np.uint8)
        assert f.read_into(a) == raw.size and np.array_equal(a, raw)
        t = torch.zeros(1 << 20, dtype=torch.uint8)
        assert f.read_into(t, file_offset=12345) == 1 << 20
        assert np.array_equal(t.numpy(), raw[12345:12345 + (1 << 20)])
        b = bytearray(100)
        assert f.read_into(b, size=50, file_offset=7, buf_offset=30) == 50
        assert b[30:80] == raw[7:57].tobytes() and b[:30] == bytes(30) and b[80:] == bytes(20)


def test_typed_and_dlpack_buffers(data):
    path, raw = data
    with ufile.File(path) as f:
        t = torch.zeros(1000, dtype=torch.float32)  # 4000 bytes
        assert f.read_into(t) == 4000
        assert t.numpy().tobytes() == raw[:4000].tobytes()

        class Only:  # an object that offers nothing but DLPack
            def __init__(self, x):
                self.__dlpack__ = x.__dlpack__
        u = torch.zeros(4096, dtype=torch.uint8)
        assert f.read_into(Only(u), file_offset=1) == 4096
        assert u.numpy().tobytes() == raw[1:4097].tobytes()


def test_short_read_at_end_of_file(data):
    path, raw = data
    with ufile.File(path) as f:
        a = np.zeros(1000, np.uint8)
        assert f.read_into(a, file_offset=raw.size - 10) == 10
        assert f.read_into(a, file_offset=raw.size + 5) == 0


def test_write_then_read_back_and_futures(io_dir):
    need_odirect(io_dir)
    path = str(io_dir / "w.bin")
    src = np.arange(1 << 20, dtype=np.uint32)
    with ufile.File(path, "w") as f:
        futs = [f.write_from_async(src, size=1 << 20, buf_offset=i << 20, file_offset=i << 20)
                for i in range(4)]
        assert [x.result() for x in futs] == [1 << 20] * 4
        assert f.write_from(b"tail", file_offset=4 << 20) == 4
    assert os.path.getsize(path) == (4 << 20) + 4
    back = np.zeros_like(src)
    with ufile.File(path, "r+", direct=True) as f:
        assert f.direct is True and opened_direct(f)
        assert f.pread(back).result() == back.nbytes
    assert np.array_equal(back, src)


def test_errors_carry_the_status_name_and_path(data):
    path, _ = data
    with ufile.File(path, "r") as f:
        with pytest.raises(ufile.CuFileError) as err:
            f.write_from(b"x" * 10)
        assert err.value.name == "EBADF" and err.value.errno == errno.EBADF
        assert err.value.path == path and path in str(err.value)
        with pytest.raises(ValueError):
            f.read_into(bytearray(10), size=11)
        with pytest.raises(TypeError):
            f.read_into(b"read-only bytes")
        with pytest.raises(TypeError):
            f.read_into(object())
    with pytest.raises(ValueError):
        f.read_into(bytearray(10))  # closed
    with pytest.raises(FileNotFoundError):
        ufile.File(str(path) + ".absent")
    with pytest.raises(ValueError):
        ufile.File(path, "rw")


def test_cufile_status_error_names_the_status():
    exc = ufile._errors.from_io_result("cuFileRead", -5022, 0, "/x")
    assert exc.name == "CU_FILE_INVALID_VALUE" and exc.code == 5022
    assert "CU_FILE_INVALID_VALUE" in str(exc) and "/x" in str(exc)


def test_op_names_match_cufile_h():
    """_OP_NAMES is the CUFILE_OP list of include/cufile.h, entry for entry."""
    header = os.path.join(os.path.dirname(__file__), "..", "..", "include", "cufile.h")
    with open(header, encoding="utf-8") as f:
        text = f.read()
    base = int(re.search(r"#define CUFILEOP_BASE_ERR (\d+)", text).group(1))
    ops = re.findall(r"CUFILE_OP\((0|CUFILEOP_BASE_ERR \+ (\d+)), (CU_FILE_\w+),", text)
    want = {0 if expr == "0" else base + int(n): name for expr, n, name in ops}
    assert len(want) == len(ops) > 40 and ufile._errors.CUFILEOP_BASE_ERR == base
    assert ufile._errors._OP_NAMES == want


def test_directory_is_refused_with_its_status(tmp_path):
    with pytest.raises(ufile.CuFileError) as err:
        ufile.File(str(tmp_path), "r")
    assert err.value.call == "cuFileHandleRegister"
    assert err.value.name == "CU_FILE_INVALID_FILE_TYPE" and err.value.code == 5018
    assert err.value.path == str(tmp_path) and str(tmp_path) in str(err.value)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    """Opening a FIFO waits for the other end: File refuses one at once, as
    cuFileHandleRegister refuses every file that is not regular or a block
    device, in each mode."""
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    with deadline(30):
        for mode in ("r", "r+", "w", "a"):
            with pytest.raises(ufile.CuFileError) as err:
                ufile.File(fifo, mode)
            assert err.value.name == "CU_FILE_INVALID_FILE_TYPE", mode
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_registered_buffer_outlives_each_read(data):
    """I/O through a caller's Buffer leaves it to the caller: the memory stays
    alive and registered until deregister_buffer."""
    path, raw = data
    a = np.zeros(1 << 20, np.uint8)
    alive = weakref.ref(a)
    reg = ufile.register_buffer(a)
    del a
    with ufile.File(path) as f:
        for offset in (0, 4096):
            assert f.read_into(reg, file_offset=offset) == 1 << 20
            gc.collect()
            assert alive() is not None, "the read released the caller's Buffer"
            assert np.array_equal(alive(), raw[offset:offset + (1 << 20)])
        assert f.read_into_async(reg).result() == 1 << 20
    ufile.deregister_buffer(reg)
    gc.collect()
    assert alive() is None
    with ufile.File(path) as f, pytest.raises(ValueError, match="released"):
        f.read_into(reg)


def _fake_no_odirect(monkeypatch):
    """The kernel's behaviour on a filesystem without O_DIRECT: open(O_CREAT |
    O_DIRECT) creates the file, then fails with EINVAL; F_SETFL of O_DIRECT
    fails with EINVAL."""
    real_open, real_fcntl = os.open, fcntl.fcntl

    def fake_open(path, flags, mode=0o777, **kw):
        if flags & os.O_DIRECT:
            os.close(real_open(path, flags & ~os.O_DIRECT, mode, **kw))
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)
        return real_open(path, flags, mode, **kw)

    def fake_fcntl(fd, cmd, arg=0, *rest):
        if cmd == fcntl.F_SETFL and arg & os.O_DIRECT:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real_fcntl(fd, cmd, arg, *rest)
    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(fcntl, "fcntl", fake_fcntl)


@pytest.mark.parametrize("mode", ["x", "w", "w+", "a", "r+"])
def test_direct_falls_back_to_buffered_without_odirect(io_dir, monkeypatch, mode):
    path = io_dir / "new.bin"
    if mode == "r+":
        path.write_bytes(b"old")
    _fake_no_odirect(monkeypatch)
    with ufile.File(str(path), mode, direct=True) as f:
        assert f.direct is False and not opened_direct(f)
        assert f.write_from(b"data", file_offset=0) == 4
    assert path.read_bytes() == b"data"
    with pytest.raises(FileExistsError):
        ufile.File(str(path), "x", direct=True)
    assert path.read_bytes() == b"data"


def test_direct_x_creates_one_file(io_dir):
    """"x" with direct=True on the real filesystem: O_DIRECT where it works."""
    path = io_dir / "x.bin"
    with ufile.File(str(path), "x", direct=True) as f:
        assert f.direct is odirect_works(io_dir) and opened_direct(f) is f.direct
        assert f.write_from(np.ones(4096, np.uint8)) == 4096
    assert path.read_bytes() == b"\x01" * 4096
    with pytest.raises(FileExistsError):
        ufile.File(str(path), "x", direct=True)


def test_buffer_registration(data):
    path, raw = data
    a = np.zeros(1 << 20, np.uint8)
    reg = ufile.register_buffer(a)
    try:
        with ufile.File(path) as f:
            assert f.read_into(a) == a.size
    finally:
        ufile.deregister_buffer(reg)
    assert np.array_equal(a, raw[:a.size])
    with pytest.raises(ufile.CuFileError) as err:
        ufile.deregister_buffer(ufile._buffers.resolve(a, True))
    assert err.value.name == "CU_FILE_MEMORY_NOT_REGISTERED"


def test_version_and_library():
    assert ufile.version() >= 1150
    assert "ufile" in os.path.basename(ufile.library_path()) or "cufile" in ufile.library_path()


def test_page_cache_residency(tmp_path):
    from ufile import _pagecache
    path = tmp_path / "r.bin"
    path.write_bytes(b"\x01" * (1 << 20))
    with open(path, "rb") as f:
        f.read()
    assert _pagecache.resident_fraction(str(path)) > 0.5
    (tmp_path / "e.bin").write_bytes(b"")
    assert _pagecache.resident_fraction(str(tmp_path / "e.bin")) == 1.0


def _import_with_library(tmp_path, env_value):
    """Runs `ufile.version()` in a fresh interpreter whose package has a copy of
    this process's library bundled beside it, with UFILE_LIBRARY=env_value."""
    pkg = tmp_path / "site" / "ufile"
    shutil.copytree(os.path.dirname(ufile.__file__), pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ufile.library_path(), pkg / "libufile.so.0")
    env = dict(os.environ, PYTHONPATH=str(pkg.parent), UFILE_LIBRARY=env_value)
    return subprocess.run([sys.executable, "-c", "import ufile; print(ufile.version())"],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("what", ["absent", "directory"])
def test_library_variable_naming_no_file_is_an_error(tmp_path, what):
    target = tmp_path / "absent.so" if what == "absent" else tmp_path
    run = _import_with_library(tmp_path, str(target))
    assert run.returncode != 0, f"loaded the bundled copy instead: {run.stdout}"
    named = "no file" if what == "absent" else "a directory"
    assert f"ImportError: ufile: UFILE_LIBRARY={target} names {named}" in run.stderr, run.stderr
    assert _import_with_library(tmp_path / "ok", "").returncode == 0  # unset: the bundled one
