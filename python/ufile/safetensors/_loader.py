# SPDX-License-Identifier: Apache-2.0
"""Loads whole safetensors files: one read plan over all files at once.

Two layouts of device memory:
- views (default): the file cut into runs of consecutive tensors of about
  ``request_bytes`` (one run per tensor above that); one buffer per run holds its
  bytes; each tensor is a view into it when its offset suits its dtype's
  alignment, a copy otherwise. A buffer lives as long as any view of it.
- owning (``max_device_bytes`` given): every tensor gets its own storage and is
  read straight into it, so no device memory beyond the tensors is used and
  dropping a tensor frees its memory."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterator

from .. import _buffers
from .._file import deregister_buffer, register_buffer
from . import _engine
from ._format import Header, TensorInfo


@dataclass
class Options:
    direct: bool | str = True            # O_DIRECT: True, False, or "auto" per file
    request_bytes: int | None = None     # bytes per cuFileRead (None: default)
    inflight: int | None = None          # cuFileRead calls in flight
    max_device_bytes: int | None = None  # None: views; a number: owning tensors
    register_buffers: bool = False       # cuFileBufRegister each destination
    times: dict | None = None            # filled with seconds from the start to each phase
    staging_buffers: int | None = None   # collective load: all-to-all staging slots (None: 4)

    def resolved(self) -> "Options":
        return Options(self.direct,
                       _engine.request_bytes_default() if self.request_bytes is None
                       else self.request_bytes,
                       _engine.inflight_default() if self.inflight is None else self.inflight,
                       self.max_device_bytes, self.register_buffers, self.times,
                       self.staging_buffers)


class _Shard:
    def __init__(self, header: Header, file: Any):
        self.header, self.file = header, file
        self.views: list[tuple[Any, int, list[TensorInfo]]] = []  # (buffer, file offset, run)
        self.owned: dict[str, Any] = {}  # owning: name -> tensor
        self.futures: list = []
        self.registered: list[_buffers.Buffer] = []


def runs(h: Header, run_bytes: int) -> list[tuple[int, int, list[TensorInfo]]]:
    """The file cut into runs of consecutive tensors of at most about run_bytes
    (a larger tensor is a run of its own; 0: the whole file, header included),
    each (first file offset, rounded down to 4 KiB for O_DIRECT; end; tensors).
    A run ends where its furthest tensor ends: an empty tensor sorted last may
    sit at the offset where a longer one begins."""
    order = sorted(h.tensors.values(), key=lambda t: (t.begin, t.name))
    if run_bytes <= 0 or not order:
        return [(0, h.file_size, order)]
    out: list[list[TensorInfo]] = []
    for info in order:
        if out and info.end - out[-1][0].begin <= run_bytes - _ALIGN:
            out[-1].append(info)
        else:
            out.append([info])
    return [((h.data_start + r[0].begin) // _ALIGN * _ALIGN,
             h.data_start + max(t.end for t in r), r) for r in out]


_ALIGN = 4096


class Load:
    """A load in progress over several files; ``tensors(i)`` waits for file i."""

    def __init__(self, headers: list[Header], fw: Any, device: str, opts: Options):
        self.fw, self.device, self.opts = fw, device, opts.resolved()
        self.shards: list[_Shard] = []
        self.times: dict[str, float] = {} if opts.times is None else opts.times
        self.times.clear()
        t0 = time.perf_counter()
        self.reader = _engine.Reader(self.opts.inflight)
        try:
            for h in headers:  # every dtype must exist before anything is read
                for info in h.tensors.values():
                    fw.dtype(info, h.path)
            for h in headers:  # open all first: a missing shard fails before any read
                self.shards.append(_Shard(h, _engine.open_for_read(h.path, self.opts.direct)))
            self.times["open"] = time.perf_counter() - t0
            # Each run's reads start as soon as its memory exists, so allocating
            # the next one (cudaMalloc) overlaps them.
            for s in self.shards:
                plan = self._owning(s) if self.opts.max_device_bytes is not None \
                    else self._views(s)
                for pieces in plan:
                    s.futures += self.reader.submit(pieces)
            self.times["alloc+submit"] = time.perf_counter() - t0
        except BaseException:
            self.close()
            raise

    def _dest(self, s: _Shard, obj: Any) -> int:
        if self.opts.register_buffers and self.device != "cpu":
            s.registered.append(register_buffer(obj))
        return self.fw.ptr(obj)

    def _views(self, s: _Shard) -> Iterator[list[_engine.Piece]]:
        rb = self.opts.request_bytes
        for lo, hi, run in runs(s.header, rb):
            buf = self.fw.bytes_buffer(hi - lo, self.device)
            s.views.append((buf, lo, run))
            what = f"tensors {run[0].name!r}..{run[-1].name!r}" if run else "the header"
            yield _engine.split(s.file, self._dest(s, buf), hi - lo, lo, what, rb)

    def _owning(self, s: _Shard) -> Iterator[list[_engine.Piece]]:
        h, rb = s.header, self.opts.request_bytes
        for info in sorted(h.tensors.values(), key=lambda t: t.begin):
            t = self.fw.empty(info, h.path, self.device)
            s.owned[info.name] = t
            if info.nbytes:
                yield _engine.split(s.file, self._dest(s, t), info.nbytes,
                                    h.data_start + info.begin, f"tensor {info.name!r}", rb)

    def tensors(self, i: int) -> dict[str, Any]:
        """File i's tensors in file (offset) order, as safetensors' load_file
        returns them, once its reads completed."""
        s = self.shards[i]
        _engine.wait_all(s.futures)
        for b in s.registered:
            deregister_buffer(b)
        s.registered = []
        h = s.header
        if self.opts.max_device_bytes is not None:
            out = {name: s.owned[name] for name in h.offset_order()}
        else:
            out = {}
            for buf, lo, run in s.views:
                for info in run:
                    out[info.name] = self.fw.from_bytes(buf, h.data_start + info.begin - lo,
                                                        info, h.path)
        s.views, s.owned = [], {}
        return out

    def close(self) -> None:
        self.reader.close()
        for s in self.shards:
            for b in s.registered:
                try:
                    deregister_buffer(b)
                except Exception:  # noqa: BLE001 - already failing; keep the first error
                    pass
            s.file.close()
        self.shards = []

    def __enter__(self) -> "Load":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_all(headers: list[Header], fw: Any, device: str, opts: Options) -> dict[str, Any]:
    """Every tensor of every file; nothing is returned unless all reads succeeded.
    ``opts.times``, a dict, gets the seconds from the start to each phase's end."""
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    with Load(headers, fw, device, opts) as load:
        for i in range(len(headers)):
            out.update(load.tensors(i))
            load.times.setdefault("first file ready", time.perf_counter() - t0)
        load.times["all ready"] = time.perf_counter() - t0
    return out


def iterate(headers: list[Header], fw: Any, device: str, opts: Options
            ) -> Iterator[tuple[str, Any]]:
    """(name, tensor) file by file, each file as soon as its reads completed; all
    files' reads are in flight from the start."""
    with Load(headers, fw, device, opts) as load:
        for i in range(len(headers)):
            yield from load.tensors(i).items()
