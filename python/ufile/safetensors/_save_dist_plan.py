# SPDX-License-Identifier: Apache-2.0
"""The plan of a collective save, as plain data computed identically on every
rank from what each rank declared (its tensors' dtypes, shapes and split
dimensions): the checkpoint's files (Hugging Face layout of the full tensors)
and who writes which bytes, so that every byte is written exactly once.

- a replicated tensor (no split): written whole by one of the ranks holding it,
  the least loaded so far (bytes assigned), lowest rank on ties;
- a tensor split along a dimension whose leading dimensions are all 1 (an outer
  split): its parts are contiguous in the file, each rank writes its own;
- a tensor split along an inner dimension: its parts are strided in the file,
  so they are gathered to the least loaded rank, which writes it whole;
- file i's header: rank i mod n.

Parts follow torch.tensor_split(full, n, dim): the first ``size % n`` ranks
hold one more index. Ranks disagreeing (dtype, split dimension, replicas of
different shapes, parts that do not make a tensor_split) is a ValueError
naming the tensor and the ranks; the executor raises it on every rank."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from . import _save_shards
from ._save_format import DTYPE_ORDER, Entry, layout
from ._format import DTYPES

_SIZE = {name: DTYPES.get(name, (1,))[0] for name in DTYPE_ORDER}


@dataclass(frozen=True)
class Held:
    """What one rank holds of a tensor: dtype, the shape of its tensor (the
    part, for a split one) and the split dimension (None: replicated)."""
    dtype: str
    shape: tuple
    dim: int | None


@dataclass
class TensorPlan:
    name: str
    dtype: str
    shape: tuple             # the full tensor's
    dim: int | None
    file: str
    offset: int              # of its first byte in the file
    nbytes: int
    kind: str                # "whole", "parts" or "gather"
    writer: int = -1         # "whole" and "gather": the rank that writes it
    parts: list = field(default_factory=list)  # (start, length) along dim, per rank

    def row_bytes(self) -> int:
        """Bytes of one index along ``dim`` (its trailing block)."""
        return math.prod(self.shape[self.dim + 1:]) * _SIZE[self.dtype]


@dataclass
class FilePlan:
    name: str
    head: bytes
    total: int
    header_writer: int


@dataclass
class SavePlan:
    files: list[FilePlan]
    index: dict | None
    tensors: list[TensorPlan]            # in file order
    load: list[int]                      # bytes each rank writes


def tensor_split_sizes(size: int, n: int) -> list[int]:
    q, r = divmod(size, n)
    return [q + 1 if k < r else q for k in range(n)]


def _order(decls: list[dict]) -> list[str]:
    """Rank 0's state-dict order, then names first held by later ranks."""
    seen: dict = {}
    for d in decls:
        for name in d:
            seen.setdefault(name, None)
    return list(seen)


def full_tensor(name: str, held: dict[int, Held], n: int) -> tuple[str, tuple, int | None]:
    """(dtype, full shape, dim) of a tensor from its holders; ValueError when
    they disagree."""
    ranks = sorted(held)
    first = held[ranks[0]]
    for r in ranks[1:]:
        h = held[r]
        if h.dtype != first.dtype:
            raise ValueError(f"tensor {name!r}: rank {ranks[0]} holds {first.dtype}, rank {r} "
                             f"holds {h.dtype}")
        if h.dim != first.dim:
            raise ValueError(f"tensor {name!r}: rank {ranks[0]} splits it along {first.dim}, "
                             f"rank {r} along {h.dim} (the shard rules must agree)")
    if first.dim is None:
        for r in ranks[1:]:
            if held[r].shape != first.shape:
                raise ValueError(f"replicated tensor {name!r}: rank {ranks[0]} holds shape "
                                 f"{list(first.shape)}, rank {r} {list(held[r].shape)}")
        return first.dtype, first.shape, None
    if ranks != list(range(n)):
        missing = sorted(set(range(n)) - set(ranks))
        raise ValueError(f"split tensor {name!r}: ranks {missing} hold no part of it")
    d = first.dim
    for r in ranks[1:]:
        a, b = held[r].shape, first.shape
        if len(a) != len(b) or a[:d] + a[d + 1:] != b[:d] + b[d + 1:]:
            raise ValueError(f"split tensor {name!r}: rank {r}'s part {list(a)} and rank "
                             f"{ranks[0]}'s {list(b)} differ outside dimension {d}")
    sizes = [held[r].shape[d] for r in ranks]
    if sizes != tensor_split_sizes(sum(sizes), n):
        raise ValueError(f"split tensor {name!r}: parts of {sizes} along dimension {d} are "
                         f"not torch.tensor_split's ({tensor_split_sizes(sum(sizes), n)})")
    shape = first.shape[:d] + (sum(sizes),) + first.shape[d + 1:]
    return first.dtype, shape, d


def make_save_plan(decls: list[dict[str, Held]], max_shard_size: int | str,
                   metadata: dict) -> SavePlan:
    """The plan for ranks whose holdings are ``decls`` (one dict per rank, in
    each rank's state-dict order); ``metadata``: each shard's."""
    n = len(decls)
    names = _order(decls)
    full = {}
    for name in names:
        held = {r: d[name] for r, d in enumerate(decls) if name in d}
        full[name] = full_tensor(name, held, n)
    nbytes = {k: math.prod(s) * _SIZE[dt] for k, (dt, s, _) in full.items()}
    limit = _save_shards.parse_size(max_shard_size)
    shards = _save_shards.split(names, nbytes.get, lambda k: None, limit) or [[]]
    fnames = _save_shards.file_names(len(shards))
    index = None
    if len(fnames) > 1:
        index = {"metadata": {"total_size": sum(nbytes.values())},
                 "weight_map": {k: f for f, ks in zip(fnames, shards) for k in ks}}
    files, tensors, load = [], [], [0] * n
    for i, (fname, keys) in enumerate(zip(fnames, shards)):
        entries = [Entry(k, full[k][0], full[k][1], nbytes[k], None) for k in keys]
        head, ordered, total = layout(entries, metadata)
        files.append(FilePlan(fname, head, total, i % n))
        for e in ordered:
            tensors.append(_assign(e, full[e.name][2], fname, len(head), decls, load))
    return SavePlan(files, index, tensors, load)


def _assign(e: Entry, dim: int | None, fname: str, data_start: int, decls: list[dict],
            load: list[int]) -> TensorPlan:
    n = len(decls)
    t = TensorPlan(e.name, e.dtype, e.shape, dim, fname, data_start + e.begin, e.nbytes,
                   "whole")
    if dim is not None:
        sizes = tensor_split_sizes(e.shape[dim], n)
        starts = [sum(sizes[:k]) for k in range(n)]
        t.parts = list(zip(starts, sizes))
        if math.prod(e.shape[:dim]) == 1:
            t.kind = "parts"
            for r, (_, size) in enumerate(t.parts):
                load[r] += size * t.row_bytes()
            return t
        t.kind = "gather"
        candidates = list(range(n))
    else:
        candidates = [r for r, d in enumerate(decls) if e.name in d]
    if e.nbytes:
        t.writer = min(candidates, key=lambda r: (load[r], r))
        load[t.writer] += e.nbytes
    else:
        t.writer = candidates[0]
    return t


def writes_of(plan: SavePlan, rank: int) -> dict[str, list[tuple]]:
    """{file: [(what, tensor name or None, kind, file offset, bytes)]} this
    rank writes (None: the header), the files in the plan's order on every
    rank; "part" pieces are its part of an outer split."""
    out: dict[str, list[tuple]] = {}
    for i, f in enumerate(plan.files):
        if f.header_writer == rank:
            out.setdefault(f.name, []).append(("writing the header", None, "header", 0,
                                               len(f.head)))
    for t in plan.tensors:
        if t.kind == "parts":
            start, size = t.parts[rank]
            if size:
                out.setdefault(t.file, []).append((f"writing rank {rank}'s part of tensor "
                                                   f"{t.name!r}", t.name, "part",
                                                   t.offset + start * t.row_bytes(),
                                                   size * t.row_bytes()))
        elif t.writer == rank and t.nbytes:
            out.setdefault(t.file, []).append((f"writing tensor {t.name!r}", t.name, t.kind,
                                               t.offset, t.nbytes))
    return {f.name: out[f.name] for f in plan.files if f.name in out}


def chunk_runs(shape: tuple, offsets: tuple, sizes: tuple, itemsize: int) -> list[tuple]:
    """(offset in the tensor's bytes, offset in the chunk's bytes, bytes) of
    each contiguous run of a chunk (``offsets``, ``sizes`` per dimension) of a
    row-major tensor of ``shape``: one run when the chunk is whole trailing
    rows, else one per index of the dimensions before the last cut one."""
    nd = len(shape)
    if math.prod(sizes) == 0:
        return []
    j = nd - 1
    while j >= 0 and sizes[j] == shape[j]:
        j -= 1
    strides = [math.prod(shape[d + 1:]) for d in range(nd)]
    if j < 0:
        return [(0, 0, math.prod(shape) * itemsize)]
    run = sizes[j] * strides[j] * itemsize
    out = []
    for m, idx in enumerate(itertools.product(*(range(s) for s in sizes[:j]))):
        start = sum((offsets[d] + idx[d]) * strides[d] for d in range(j)) + \
            offsets[j] * strides[j]
        out.append((start * itemsize, m * run, run))
    return out
