# SPDX-License-Identifier: Apache-2.0
"""ufile.File: a cuFile handle on a path, with synchronous and future-returning I/O."""
from __future__ import annotations

import concurrent.futures as _futures
import ctypes
import errno
import fcntl
import os
import threading
from typing import Any

from . import _buffers, _errors, _lib

_MODES = {"r": os.O_RDONLY, "r+": os.O_RDWR, "w": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
          "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC, "a": os.O_RDWR | os.O_CREAT,
          "x": os.O_RDWR | os.O_CREAT | os.O_EXCL}

_POOL: _futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def executor() -> _futures.ThreadPoolExecutor:
    """The package's thread pool for asynchronous calls. ctypes releases the GIL
    during cuFileRead/cuFileWrite, so requests in flight run in parallel."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            workers = int(os.environ.get("UFILE_PY_THREADS", "16"))
            _POOL = _futures.ThreadPoolExecutor(workers, thread_name_prefix="ufile-py")
    return _POOL


class File:
    """A file registered with cuFile (``cuFileHandleRegister``).

    ``mode`` is ``"r"``, ``"r+"``, ``"w"``, ``"w+"``, ``"a"`` (create, no
    truncation, offsets still explicit) or ``"x"``. ``direct=True`` opens with
    O_DIRECT (cold data at the disk's O_DIRECT speed, the page cache left alone);
    where the filesystem refuses O_DIRECT the file stays buffered and
    ``self.direct`` says False. Use as a context manager or call ``close()``."""

    def __init__(self, path: str | os.PathLike, mode: str = "r", direct: bool = False):
        if mode not in _MODES:
            raise ValueError(f"ufile.File: mode must be one of {sorted(_MODES)}, not {mode!r}")
        self.path = os.fspath(path)
        self.mode = mode
        lib = _lib.lib()
        fd = os.open(self.path, _MODES[mode] | os.O_CLOEXEC, 0o644)
        try:
            self.direct = bool(direct) and _set_direct(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._handle = ctypes.c_void_p()
        descr = _lib.CUfileDescr_t()
        descr.type = _lib.CU_FILE_HANDLE_TYPE_OPAQUE_FD
        descr.handle.fd = fd
        st = lib.cuFileHandleRegister(ctypes.byref(self._handle), ctypes.byref(descr))
        if st.err != 0:
            os.close(fd)
            self._fd = -1
            raise _errors.from_status("cuFileHandleRegister", st.err, self.path)

    # -- lifetime -------------------------------------------------------------
    def close(self) -> None:
        """Deregisters the handle and closes the file; I/O must have returned."""
        if self._fd >= 0:
            _lib.lib().cuFileHandleDeregister(self._handle)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def fileno(self) -> int:
        return self._fd

    def handle(self) -> int:
        """The CUfileHandle_t of this file (for calls into the library); raises
        ValueError once the file is closed."""
        if self._fd < 0:
            raise ValueError(f"ufile.File: the file is closed: {self.path}")
        return self._handle.value

    def size(self) -> int:
        """The file's current size in bytes."""
        return os.fstat(self._fd).st_size

    # -- I/O --------------------------------------------------------------------
    def _io(self, write: bool, buf: Any, size: int | None, file_offset: int,
            buf_offset: int) -> int:
        if self._fd < 0:
            raise ValueError(f"ufile.File: I/O on a closed file: {self.path}")
        b = _buffers.resolve(buf, writable=not write)
        try:
            if size is None:
                size = b.nbytes - buf_offset
            if size < 0 or buf_offset < 0 or file_offset < 0 or buf_offset + size > b.nbytes:
                raise ValueError(f"ufile.File: range [{buf_offset}, +{size}) outside the "
                                 f"{b.nbytes}-byte buffer (or negative offset): {self.path}")
            fn = _lib.lib().cuFileWrite if write else _lib.lib().cuFileRead
            ret = fn(self._handle, b.ptr, size, file_offset, buf_offset)
            if ret < 0:
                call = "cuFileWrite" if write else "cuFileRead"
                raise _errors.from_io_result(call, ret, ctypes.get_errno(), self.path)
            return ret
        finally:
            if b is not buf:  # a caller's Buffer stays theirs to release
                b.release()

    def read_into(self, buf: Any, size: int | None = None, file_offset: int = 0,
                  buf_offset: int = 0) -> int:
        """Reads ``size`` bytes (default: the rest of the buffer after
        ``buf_offset``) at ``file_offset`` into ``buf``; returns bytes read, short
        only at end of file. Raises CuFileError."""
        return self._io(False, buf, size, file_offset, buf_offset)

    def write_from(self, buf: Any, size: int | None = None, file_offset: int = 0,
                   buf_offset: int = 0) -> int:
        """Writes ``size`` bytes of ``buf`` from ``buf_offset`` at ``file_offset``;
        returns bytes written. Raises CuFileError."""
        return self._io(True, buf, size, file_offset, buf_offset)

    def read_into_async(self, buf: Any, size: int | None = None, file_offset: int = 0,
                        buf_offset: int = 0) -> _futures.Future:
        """``read_into`` on the package's thread pool; the Future's result is the
        byte count (or it raises CuFileError). ``buf`` must stay alive until then."""
        return executor().submit(self._io, False, buf, size, file_offset, buf_offset)

    def write_from_async(self, buf: Any, size: int | None = None, file_offset: int = 0,
                         buf_offset: int = 0) -> _futures.Future:
        """``write_from`` on the package's thread pool; see read_into_async."""
        return executor().submit(self._io, True, buf, size, file_offset, buf_offset)

    # KvikIO's names.
    pread = read_into_async
    pwrite = write_from_async


def _set_direct(fd: int) -> bool:
    """Turns O_DIRECT on for fd; False where the filesystem refuses it (EINVAL).
    Setting it after the open leaves a file the open created in place, so a
    buffered file needs no second open (which "x" would refuse)."""
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    try:
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_DIRECT)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    return True


def register_buffer(buf: Any) -> _buffers.Buffer:
    """cuFileBufRegister over the whole of ``buf``; returns the Buffer to pass to
    ``deregister_buffer``. Registration pins nothing extra in ufile; it makes
    reads into that base range-checked against the registered length."""
    b = _buffers.resolve(buf, writable=True)
    st = _lib.lib().cuFileBufRegister(b.ptr, b.nbytes, 0)
    if st.err != 0:
        b.release()
        raise _errors.from_status("cuFileBufRegister", st.err, None)
    return b


def deregister_buffer(b: _buffers.Buffer) -> None:
    """cuFileBufDeregister of a Buffer returned by register_buffer."""
    st = _lib.lib().cuFileBufDeregister(b.ptr)
    b.release()
    if st.err != 0:
        raise _errors.from_status("cuFileBufDeregister", st.err, None)
