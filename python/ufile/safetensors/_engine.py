# SPDX-License-Identifier: Apache-2.0
"""Issues planned reads through ufile: large requests, several files in flight.

A plan is a list of (File, destination address, size, file offset) pieces. Each
piece is one cuFileRead, which ufile itself splits into chunks over its I/O
threads, reads into pinned staging and copies to the GPU asynchronously; Python
threads keep ``inflight`` such requests running (ctypes drops the GIL in the call),
in the order planned (file by file)."""
from __future__ import annotations

import concurrent.futures as _futures
import ctypes
import os
from dataclasses import dataclass

from .. import _errors, _lib, _pagecache
from .._file import File
from ._format import SafetensorError

DEFAULT_REQUEST_BYTES = 256 << 20
DEFAULT_INFLIGHT = 8


@dataclass
class Piece:
    file: File
    ptr: int
    size: int
    file_offset: int
    what: str  # the tensor or range named in errors


def open_for_read(path: str, direct: bool | str) -> File:
    """Opens ``path`` for reading, with O_DIRECT when ``direct`` is True (ufile
    then reads page-cache-resident chunks from the page cache itself). "auto"
    uses O_DIRECT unless at least half of the file is in the page cache."""
    if direct == "auto":
        direct = _pagecache.resident_fraction(path) < 0.5
    return File(path, "r", direct=bool(direct))


def split(file: File, ptr: int, size: int, file_offset: int, what: str,
          request_bytes: int) -> list[Piece]:
    """Pieces of at most request_bytes (0: one piece), cut at multiples of
    request_bytes in the file so that inner cuts stay O_DIRECT aligned."""
    if size == 0:
        return []
    if request_bytes <= 0 or size <= request_bytes:
        return [Piece(file, ptr, size, file_offset, what)]
    out, pos, end = [], file_offset, file_offset + size
    while pos < end:
        nxt = min(end, (pos // request_bytes + 1) * request_bytes)
        out.append(Piece(file, ptr + pos - file_offset, nxt - pos, pos, what))
        pos = nxt
    return out


def _read(piece: Piece) -> None:
    lib = _lib.lib()
    ret = lib.cuFileRead(piece.file.handle(), piece.ptr, piece.size, piece.file_offset, 0)
    if ret < 0:
        err = _errors.from_io_result("cuFileRead", ret, ctypes.get_errno(), piece.file.path)
        raise SafetensorError(f"reading {piece.what} from {piece.file.path}: {err}") from err
    if ret != piece.size:
        raise SafetensorError(f"reading {piece.what} from {piece.file.path}: got {ret} of "
                              f"{piece.size} bytes at offset {piece.file_offset} "
                              f"(file truncated while loading?)")


class Reader:
    """Runs pieces on ``inflight`` threads; ``submit`` returns their futures."""

    def __init__(self, inflight: int):
        self.pool = _futures.ThreadPoolExecutor(max(1, inflight),
                                                thread_name_prefix="ufile-load")

    def submit(self, pieces: list[Piece]) -> list[_futures.Future]:
        return [self.pool.submit(_read, p) for p in pieces]

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_all(futures: list[_futures.Future]) -> None:
    """Waits for every future; raises the first failure in plan order."""
    _futures.wait(futures)
    for f in futures:
        f.result()


def inflight_default() -> int:
    return int(os.environ.get("UFILE_LOAD_INFLIGHT", DEFAULT_INFLIGHT))


def request_bytes_default() -> int:
    return int(os.environ.get("UFILE_LOAD_REQUEST_BYTES", DEFAULT_REQUEST_BYTES))
