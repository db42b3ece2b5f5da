# SPDX-License-Identifier: Apache-2.0
"""The seam between a save and the file system: every call a save makes that
can fail on a full, broken or read-only file system goes through ``IO``, so
tests replace it with one that fails (ENOSPC, EIO, EROFS at the k-th call).

ufile's own fault seam (SysOps, src/sys/sys_ops.h) is C++ only and not
reachable from Python; this one sits above ufile: ``write`` is one
cuFileWrite (``ufile.File.write_from``), so a fault here is what cuFileWrite
would report for the same error. Thread-safety: ``write`` is called from the
package's thread pool; the others from the saving thread."""
from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

from .._file import File


_SYNC_FILE_RANGE_WRITE = 2


@functools.lru_cache(maxsize=None)
def libc() -> Any:
    """The C library, with the prototypes the save calls through it
    (sync_file_range here, madvise for _save_staging)."""
    lib = ctypes.CDLL(None, use_errno=True)
    lib.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return lib


def start_writeback(fd: int, offset: int, size: int) -> None:
    """Starts writing back the page cache's dirty pages of a written range
    (sync_file_range, SYNC_FILE_RANGE_WRITE), so the disk takes a buffered
    save's bytes while the rest are written, not all at the final fsync
    (which still makes them durable): four 1.4 GB files written by pwrite
    of 64 MiB took 4.6-5.7 s so against 6.4-8.2 s without, five runs each
    alternated, on a 2-core VM. A hint: its failure is ignored."""
    libc().sync_file_range(fd, offset, size, _SYNC_FILE_RANGE_WRITE)


class SaveIO:
    """The real file system."""

    def open(self, path: str, direct: bool) -> File:
        """Creates ``path`` (it must not exist) for writing through ufile."""
        return File(path, "x", direct=direct)

    def open_existing(self, path: str, direct: bool) -> File:
        """Opens a file another rank created, for writing its share."""
        return File(path, "r+", direct=direct)

    def allocate(self, fd: int, size: int) -> None:
        """Reserves ``size`` bytes, so a full disk fails here, before any write."""
        if size:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                if exc.errno not in (95, 22):  # EOPNOTSUPP, EINVAL: not reservable here
                    raise

    def write(self, f: File, buf: Any, size: int, file_offset: int, buf_offset: int) -> int:
        done = f.write_from(buf, size, file_offset, buf_offset)
        if not f.direct and done > 0:
            start_writeback(f.fileno(), file_offset, done)
        return done

    def fsync(self, fd: int) -> None:
        os.fsync(fd)

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def link(self, src: str, dst: str) -> None:
        os.link(src, dst)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def write_small(self, path: str, data: bytes) -> None:
        """Writes a small file (an index) under ``path``, which must not exist."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            self.fsync(fd)
        finally:
            os.close(fd)


IO: SaveIO = SaveIO()
