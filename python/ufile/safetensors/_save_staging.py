# SPDX-License-Identifier: Apache-2.0
"""Pinned host memory that asynchronous saves copy CUDA tensors into.

Pinning is what makes a process's first asynchronous save slow: 16 GB took
11.3 s as one pinned torch tensor a source, 7.7 s as one tensor, and 2.7-3.1
s as a private mapping with huge pages advised, its pages faulted in by 8
threads, then registered with CUDA once (H200, 16 cores; shared 4.2-5.3 s,
without the advice 4.5-4.7 s; 16 threads slower than 8), where the copy into
it takes 0.3 s. torch's pinned allocator, where the caller's
PYTORCH_CUDA_ALLOC_CONF sets ``pinned_use_cuda_host_register`` and 8
threads, is on a par (16 GB in 1.84-2.10 s against this region's 1.64-2.50
s, alternated in one run). So a save's staging is one such region, and the
process keeps it for the next save (as torch's pinned allocator keeps its
blocks): a save reuses the kept region when it is large enough and free,
else maps a new one, which is kept in place of the old one when the old one
is free and no larger by then (else the new one is unmapped when its save
ends). ``free_save_staging()`` lets the kept region go. Thread-safe."""
from __future__ import annotations

import ctypes
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from . import _save_io

ALIGN = 4096                  # each source starts on a page
_PIECE = 1 << 30              # pages a thread faults in at a time
_THREADS = 8                  # 16 threads were slower than 8 on 16 cores
_MADV_HUGEPAGE, _MADV_POPULATE_WRITE = 14, 23   # Linux; the latter since 5.14
_REGISTER_PORTABLE = 1        # cudaHostRegisterPortable: pinned for every device

_lock = threading.Lock()
_kept: "Region | None" = None


def _cuda_register(addr: int, size: int) -> None:
    import torch
    err = torch.cuda.cudart().cudaHostRegister(addr, size, _REGISTER_PORTABLE)
    if int(err) != 0:
        raise OSError(12, f"cudaHostRegister of {size} bytes failed (CUDA error {int(err)})")


def _cuda_unregister(addr: int) -> None:
    import torch
    torch.cuda.cudart().cudaHostUnregister(addr)


# Test seams: pin and unpin a mapped range (CUDA here).
register: Callable[[int, int], None] = _cuda_register
unregister: Callable[[int], None] = _cuda_unregister


def _fault_in(addr: int, size: int) -> None:
    """Faults the pages in from several threads (ctypes lets the GIL go):
    MADV_POPULATE_WRITE, or writing zeros where the kernel lacks it."""
    libc = _save_io.libc()
    libc.madvise(addr, size, _MADV_HUGEPAGE)  # advice only: fails harmlessly

    def piece(off: int) -> None:
        n = min(_PIECE, size - off)
        if libc.madvise(addr + off, n, _MADV_POPULATE_WRITE) != 0:
            ctypes.memset(addr + off, 0, n)
    with ThreadPoolExecutor(min(_THREADS, os.cpu_count() or 1),
                            thread_name_prefix="ufile-save-pin") as pool:
        list(pool.map(piece, range(0, size, _PIECE)))


class Region:
    """``nbytes`` of mapped, faulted-in, pinned host memory; ``tensor`` a
    uint8 torch tensor over it."""

    def __init__(self, nbytes: int):
        import torch
        self.nbytes = max(ALIGN, -(-nbytes // ALIGN) * ALIGN)
        self.users = 0
        # Private: huge pages apply (not to shared memory), a forked child copies on write.
        self._map: Any = mmap.mmap(-1, self.nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        self._anchor: Any = ctypes.c_char.from_buffer(self._map)
        self.addr = ctypes.addressof(self._anchor)
        _fault_in(self.addr, self.nbytes)
        register(self.addr, self.nbytes)
        self.tensor: Any = torch.frombuffer(self._map, dtype=torch.uint8)

    def retire(self) -> None:
        """Unpins; the mapping goes when the last view of ``tensor`` does."""
        unregister(self.addr)
        self.tensor = self._anchor = self._map = None


def acquire(nbytes: int) -> Region:
    """A region of at least ``nbytes`` for one save; give it back with
    ``release``. A new region is pinned outside the lock (seconds for
    gigabytes), so other saves' releases do not wait for it."""
    global _kept
    with _lock:
        if _kept is not None and _kept.users == 0 and _kept.nbytes >= nbytes:
            _kept.users += 1
            return _kept
    region = Region(nbytes)
    with _lock:
        region.users += 1
        old = _kept
        if old is not None and (old.users or old.nbytes > region.nbytes):
            return region             # a one-off: unpinned when its save ends
        _kept = region
    if old is not None:
        old.retire()
    return region


def release(region: Region) -> None:
    with _lock:
        region.users -= 1
        if region.users or region is _kept:
            return
    region.retire()


def free_save_staging() -> None:
    """Lets the pinned memory kept for the next asynchronous save go (now,
    or when the save using it ends)."""
    global _kept
    with _lock:
        region, _kept = _kept, None
        if region is None or region.users:
            return
    region.retire()


def kept_bytes() -> int:
    """Bytes of pinned memory kept for the next save (0: none)."""
    with _lock:
        return _kept.nbytes if _kept is not None else 0
