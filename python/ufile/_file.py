# SPDX-License-Identifier: Apache-2.0
"""ufile.File: a cuFile handle on a path, with synchronous and future-returning I/O."""
from __future__ import annotations

import concurrent.futures as _futures
import ctypes
import errno
import fcntl
import operator
import os
import threading
import warnings
from typing import Any

from . import _buffers, _errors, _lib

_MODES = {"r": os.O_RDONLY, "r+": os.O_RDWR, "w": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
          "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC, "a": os.O_RDWR | os.O_CREAT,
          "x": os.O_RDWR | os.O_CREAT | os.O_EXCL}

# C's off_t and ssize_t: sizes and offsets beyond would wrap in ctypes.
_MAX_COUNT = 2**63 - 1

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
        # O_NONBLOCK for the open only: on a FIFO it would wait for the other
        # end (cuFileHandleRegister then refuses the FIFO anyway).
        fd = os.open(self.path, _MODES[mode] | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            self.direct = bool(direct) and _set_direct(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        st = os.fstat(fd)
        self._ident = (st.st_dev, st.st_ino)
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
        """Deregisters the handle and closes the file; I/O must have returned.
        A descriptor that no longer names the file (the application closed it,
        and the number was reused) is left open, with a RuntimeWarning."""
        if self._fd < 0:
            return
        fd, self._fd = self._fd, -1
        _lib.lib().cuFileHandleDeregister(self._handle)
        try:
            st = os.fstat(fd)
            same = (st.st_dev, st.st_ino) == self._ident
        except OSError:
            same = False
        if same:
            os.close(fd)
        else:
            warnings.warn(f"ufile.File: fd {fd} of {self.path} was closed outside this File "
                          "(it now names another file, or nothing): left as it is",
                          RuntimeWarning, stacklevel=2)

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
    def _start(self, write: bool, buf: Any, size: Any, file_offset: Any,
               buf_offset: Any) -> tuple:
        """Checks the arguments and takes a use of the buffer (so that it cannot
        be released until the I/O is done): the arguments of _run."""
        if self._fd < 0:
            raise ValueError(f"ufile.File: I/O on a closed file: {self.path}")
        file_offset, buf_offset = _count("file_offset", file_offset), _count("buf_offset",
                                                                             buf_offset)
        size = None if size is None else _count("size", size)
        b = _buffers.resolve(buf, writable=not write)
        try:
            b.acquire()
        except BaseException:
            if b is not buf:
                b.release()
            raise
        try:
            if size is None:
                size = max(b.nbytes - buf_offset, 0)
            if buf_offset + size > b.nbytes:
                raise ValueError(f"ufile.File: range [{buf_offset}, +{size}) outside the "
                                 f"{b.nbytes}-byte buffer: {self.path}")
        except BaseException:
            self._finish(buf, b)
            raise
        return write, buf, b, size, file_offset, buf_offset

    @staticmethod
    def _finish(buf: Any, b: _buffers.Buffer) -> None:
        b.done()
        if b is not buf:  # a caller's Buffer stays theirs to release
            b.release()

    def _run(self, write: bool, buf: Any, b: _buffers.Buffer, size: int, file_offset: int,
             buf_offset: int) -> int:
        try:
            b.check()
            fn = _lib.lib().cuFileWrite if write else _lib.lib().cuFileRead
            ret = fn(self._handle, b.ptr, size, file_offset, buf_offset)
            if ret < 0:
                call = "cuFileWrite" if write else "cuFileRead"
                raise _errors.from_io_result(call, ret, ctypes.get_errno(), self.path)
            return ret
        finally:
            self._finish(buf, b)

    def read_into(self, buf: Any, size: int | None = None, file_offset: int = 0,
                  buf_offset: int = 0) -> int:
        """Reads ``size`` bytes (default: the rest of the buffer after
        ``buf_offset``) at ``file_offset`` into ``buf``; returns bytes read, short
        only at end of file. Raises CuFileError; TypeError or ValueError for a
        size or offset that is not an int in [0, 2**63 - 1]."""
        return self._run(*self._start(False, buf, size, file_offset, buf_offset))

    def write_from(self, buf: Any, size: int | None = None, file_offset: int = 0,
                   buf_offset: int = 0) -> int:
        """Writes ``size`` bytes of ``buf`` from ``buf_offset`` at ``file_offset``;
        returns bytes written. Raises as read_into."""
        return self._run(*self._start(True, buf, size, file_offset, buf_offset))

    def read_into_async(self, buf: Any, size: int | None = None, file_offset: int = 0,
                        buf_offset: int = 0) -> _futures.Future:
        """``read_into`` on the package's thread pool; the Future's result is the
        byte count (or it raises CuFileError). Bad arguments raise here. The
        buffer is held (a Buffer cannot be deregistered) until the Future is done."""
        return self._submit(self._start(False, buf, size, file_offset, buf_offset))

    def write_from_async(self, buf: Any, size: int | None = None, file_offset: int = 0,
                         buf_offset: int = 0) -> _futures.Future:
        """``write_from`` on the package's thread pool; see read_into_async."""
        return self._submit(self._start(True, buf, size, file_offset, buf_offset))

    def _submit(self, args: tuple) -> _futures.Future:
        try:
            return executor().submit(self._run, *args)
        except BaseException:  # a pool shut down (interpreter exit): give the use back
            self._finish(args[1], args[2])
            raise

    # KvikIO's names.
    pread = read_into_async
    pwrite = write_from_async


def _count(name: str, value: Any) -> int:
    """value as an int in [0, 2**63 - 1]; TypeError or ValueError, naming it."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"ufile.File: {name} must be an int, not "
                        f"{type(value).__name__} ({value!r})") from None
    if not 0 <= n <= _MAX_COUNT:
        raise ValueError(f"ufile.File: {name}={n} is outside [0, 2**63 - 1]")
    return n


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
    ``deregister_buffer``, which keeps ``buf`` alive (and a bytearray's size
    fixed) until then. Registration pins nothing extra in ufile; it makes
    reads into that base range-checked against the registered length. A
    Buffer dropped without deregister_buffer is deregistered when collected.
    Passing a Buffer already registered raises CuFileError and leaves it as
    it was."""
    b = _buffers.resolve(buf, writable=True)
    lib = _lib.lib()
    st = lib.cuFileBufRegister(b.ptr, b.nbytes, 0)
    if st.err != 0:
        if b is not buf:  # the caller's Buffer stays registered and theirs
            b.release()
        raise _errors.from_status("cuFileBufRegister", st.err, None)
    b.on_release(lib.cuFileBufDeregister)
    return b


def deregister_buffer(b: _buffers.Buffer) -> None:
    """cuFileBufDeregister of a Buffer returned by register_buffer, then the
    Buffer is released. BufferError (nothing done) while an I/O uses it."""
    if not isinstance(b, _buffers.Buffer):
        raise TypeError("ufile.deregister_buffer takes the Buffer that register_buffer "
                        f"returned, not a {type(b).__name__}")
    b.retire()
    st = _lib.lib().cuFileBufDeregister(b.ptr)
    b.release()
    if st.err != 0:
        raise _errors.from_status("cuFileBufDeregister", st.err, None)
