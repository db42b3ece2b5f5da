# SPDX-License-Identifier: Apache-2.0
"""Writes one safetensors file from its layout, crash-safe: the bytes go to a
new file under a temporary name beside the final one (``.NAME.ufile-tmp-PID-
RANDOM``, which no loader takes for a checkpoint file), in parallel pieces
through ufile (cuFileWrite from device or host memory at each tensor's
offset), then the file is flushed (fsync), renamed over the final name, and
the directory flushed. Any failure removes the temporary file and raises
OSError naming the file (and the tensor being written) with the errno."""
from __future__ import annotations

import os
import secrets
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

from .._file import executor
from . import _save_io
from ._save_format import Entry

TEMP_MARK = ".ufile-tmp-"


@dataclass
class WriteOptions:
    """``direct``: open with O_DIRECT where the file system allows it (ufile
    takes any offset and size either way); ``request_bytes``: bytes per
    cuFileWrite; ``inflight``: cuFileWrite calls in flight per file."""
    direct: bool = False
    request_bytes: int = 64 << 20
    inflight: int = 8

    def __post_init__(self) -> None:
        if not isinstance(self.direct, bool):
            raise TypeError(f"direct must be True or False, not {self.direct!r}")
        if self.request_bytes < 4096 or self.inflight < 1:
            raise ValueError(f"request_bytes must be at least 4096 and inflight at least 1 "
                             f"(got {self.request_bytes}, {self.inflight})")


def temp_name(final: str) -> str:
    d, base = os.path.split(final)
    return os.path.join(d, f".{base}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def is_temp(name: str) -> bool:
    return name.startswith(".") and TEMP_MARK in name


def resolve_final(filename: Any) -> str:
    """The path to replace: a symbolic link's target (as the package, which
    opens the name, writes through the link), else the name itself."""
    path = os.path.abspath(os.fspath(filename))
    if os.path.islink(path):
        path = os.path.realpath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory, not a file to save into", path)
    return path


def _umask() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _mode_for(final: str) -> int:
    """The mode the package's file would have: the replaced file's, else
    0666 less the umask."""
    try:
        return os.stat(final).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~_umask()


def sync_devices(entries: list[Entry]) -> None:
    """Waits for the work queued on each CUDA device holding a source, so
    cuFileWrite reads the tensors' final values."""
    devices = {e.source.device for e in entries
               if e.source is not None and getattr(e.source, "is_cuda", False)}
    if devices:
        import torch
        for d in devices:
            torch.cuda.synchronize(d)


def _pieces(head: bytes, entries: list[Entry], request: int) -> list[tuple]:
    """(what, source, size, file offset, source offset) of every write."""
    out = [("writing the header", head, len(head), 0, 0)]
    for e in entries:
        for off in range(0, e.nbytes, request):
            size = min(request, e.nbytes - off)
            out.append((f"writing tensor {e.name!r}", e.source, size, len(head) + e.begin + off, off))
    return out


def _failure(exc: BaseException, final: str, what: str) -> BaseException:
    if isinstance(exc, OSError) and exc.errno:
        err = OSError(exc.errno, f"{os.strerror(exc.errno)} (saving {final}: {what})",
                      final)
        return err
    return exc


def write_pieces(f: Any, final: str, pieces: list[tuple], opts: WriteOptions,
                 on_piece: Callable[[int], None] | None = None) -> None:
    """``pieces`` ((what, source, size, file offset, source offset), see
    _pieces), ``opts.inflight`` cuFileWrite calls at once; the first failure
    in file order is raised after the calls in flight return."""
    io = _save_io.IO
    pending: list[tuple[Future, tuple]] = []
    failed: tuple | None = None

    def reap(fut: Future, piece: tuple) -> None:
        nonlocal failed
        try:
            done = fut.result()
            if done != piece[2]:
                raise OSError(5, f"short write: {done} of {piece[2]} bytes")
            if on_piece is not None:
                on_piece(piece[2])
        except BaseException as exc:  # noqa: BLE001 - kept, raised once all returned
            if failed is None or piece[3] < failed[0][3]:
                failed = (piece, exc)

    for piece in pieces:
        if failed is not None:
            break
        if len(pending) >= opts.inflight:
            reap(*pending.pop(0))
        _, src, size, foff, boff = piece
        pending.append((executor().submit(io.write, f, src, size, foff, boff), piece))
    for fut, piece in pending:
        reap(fut, piece)
    if failed is not None:
        raise _failure(failed[1], final, failed[0][0]) from failed[1]


def write_temp(final: str, head: bytes, entries: list[Entry], total: int,
               opts: WriteOptions) -> str:
    """Writes the whole file under a temporary name beside ``final`` and
    flushes it; returns that name. On failure nothing is left behind."""
    io = _save_io.IO
    tmp = temp_name(final)
    try:
        f = io.open(tmp, opts.direct)
    except OSError as exc:
        raise _failure(exc, final, f"creating {tmp}") from exc
    try:
        try:
            os.fchmod(f.fileno(), _mode_for(final))
            io.allocate(f.fileno(), total)
        except OSError as exc:
            raise _failure(exc, final, f"reserving {total} bytes") from exc
        write_pieces(f, final, _pieces(head, entries, opts.request_bytes), opts)
        try:
            io.fsync(f.fileno())
        except OSError as exc:
            raise _failure(exc, final, "flushing (fsync)") from exc
    except BaseException:
        f.close()
        _remove(tmp)
        raise
    f.close()
    return tmp


def publish(tmp: str, final: str) -> None:
    """Renames a flushed temporary file over ``final`` and flushes the
    directory; a failed rename removes the temporary file."""
    io = _save_io.IO
    try:
        io.rename(tmp, final)
    except OSError as exc:
        _remove(tmp)
        raise _failure(exc, final, "renaming the written file into place") from exc
    sync_dir(os.path.dirname(final), final)


def sync_dir(d: str, final: str) -> None:
    try:
        _save_io.IO.fsync_dir(d)
    except OSError as exc:
        raise _failure(exc, final, f"flushing the directory {d} (fsync): the new file is in "
                                   f"place but may not survive a power loss") from exc


def _remove(path: str) -> None:
    try:
        _save_io.IO.unlink(path)
    except OSError:
        pass


def save_atomic(final: str, head: bytes, entries: list[Entry], total: int,
                opts: WriteOptions) -> None:
    """One file, written beside ``final`` and renamed over it."""
    sync_devices(entries)
    publish(write_temp(final, head, entries, total, opts), final)
