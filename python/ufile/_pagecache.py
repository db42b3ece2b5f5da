# SPDX-License-Identifier: Apache-2.0
"""How much of a file the page cache holds (mmap + mincore), to choose O_DIRECT
(cold data) or buffered reads (hot data) per file."""
from __future__ import annotations

import ctypes
import mmap
import os

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_int64]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_fraction(path: str) -> float:
    """Fraction of the file's pages in the page cache; 0.0 when it cannot tell.
    Costs one mmap and one mincore: about 1 byte of vector per 4 KiB page."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 1.0
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            return 0.0
        try:
            pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, size, vec) != 0:
                return 0.0
            return _count(vec, pages)
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


# mincore sets bit 0 of each byte for a resident page; the other bits are reserved.
_BIT0 = bytes(i & 1 for i in range(256))


def _count(vec: ctypes.Array, pages: int) -> float:
    return bytes(vec).translate(_BIT0).count(1) / pages
