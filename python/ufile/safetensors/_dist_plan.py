# SPDX-License-Identifier: Apache-2.0
"""The plan of a collective load: who reads which byte range of which file, and
which collectives complete the tensors. Plain data, computed identically on
every rank from the same inputs (the checkpoint's headers, the agreed split
dimensions, every rank's selection), so it needs no process group and is
unit-tested on its own.

Each byte any rank needs is read exactly once, by one rank, and lands where it
stays wherever it can:
- *direct*: a rank's own contiguous part (a whole tensor only it needs, or its
  part of a tensor split along a dimension whose leading dimensions are all 1,
  such as dimension 0) is read straight into its tensor; no collective;
- *broadcast*: a tensor two or more ranks need whole is cut into chunks of at
  most ``chunk`` bytes; one of the ranks that need it (the one with the fewest
  bytes to read so far) reads each chunk straight into its own tensor and
  broadcasts it into the others' tensors (a rank that needs none of it
  receives into scratch);
- *all-to-all*: a tensor split along an inner dimension (each rank's part is
  strided in the file) is cut into runs of whole outer rows; every rank reads a
  contiguous share of a run's rows into staging, packs them so that each
  rank's columns are contiguous, and one all_to_all delivers each rank's
  columns straight into its tensor.
Collectives (``ops``) follow the files' order and every rank issues them in
that order."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ._format import Header, TensorInfo

ALIGN = 4096                 # chunk cuts fall on 4 KiB file offsets (O_DIRECT)


@dataclass(frozen=True)
class Part:
    """What one rank receives of one tensor: all of it (dim None) or
    ``torch.tensor_split(tensor, ranks, dim)[rank]``."""
    name: str
    dtype: str
    shape: tuple           # the rank's tensor
    dim: int | None
    start: int = 0         # first index along dim
    length: int = 0        # indices along dim


@dataclass(frozen=True)
class Read:
    """One contiguous range of a file, read into a tensor (``dest``, at
    ``dest_offset`` bytes) or, with ``dest`` "", into the rank's staging."""
    file: int              # index into the plan's files
    offset: int            # file offset
    size: int
    dest: str
    dest_offset: int


@dataclass(frozen=True)
class Broadcast:
    """Bytes [lo, hi) of tensor ``name``: ``root`` reads them into its tensor
    (``read``) and broadcasts them; ``ranks`` keep them."""
    name: str
    lo: int
    hi: int
    root: int
    ranks: tuple
    read: Read


@dataclass(frozen=True)
class AllToAll:
    """Outer rows [o0, o1) of tensor ``name`` (split along an inner dimension):
    rank j reads rows ``rows[j]`` = (first, count) into staging (``reads[j]``,
    None when count is 0) and sends rank k the bytes ``cols[k]`` = (offset in
    a row, size; size 0: k needs none) of each row; rank k receives rows
    [o0, o1) of its part in place."""
    name: str
    o0: int
    o1: int
    row_bytes: int
    rows: tuple
    cols: tuple
    reads: tuple

    def send_bytes(self, rank: int) -> int:
        return self.rows[rank][1] * sum(c[1] for c in self.cols)

    def recv_bytes(self, rank: int) -> int:
        return (self.o1 - self.o0) * self.cols[rank][1]


@dataclass
class Plan:
    ranks: int
    files: list                    # paths
    parts: list                    # per rank: {name: Part}, checkpoint order
    direct: list                   # per rank: list[Read], file order
    ops: list = field(default_factory=list)   # Broadcast | AllToAll, issue order
    chunk: int = 0                 # largest broadcast chunk (bytes)
    slab: int = 0                  # largest all-to-all staging of one rank (bytes)
    recv: int = 0                  # largest receive of one op into scratch (bytes)

    def read_bytes(self, rank: int) -> int:
        """Bytes ``rank`` reads from files (direct and for collectives)."""
        n = sum(r.size for r in self.direct[rank])
        for op in self.ops:
            if isinstance(op, Broadcast):
                n += op.read.size if op.root == rank else 0
            elif op.reads[rank] is not None:
                n += op.reads[rank].size
        return n

    def position(self, op: Broadcast | AllToAll) -> tuple:
        """(file, offset) where the op's bytes begin: direct reads before it
        in the files are issued before it."""
        if isinstance(op, Broadcast):
            return op.read.file, op.read.offset
        j = next(j for j, r in enumerate(op.reads) if r is not None)
        return op.reads[j].file, op.reads[j].offset - (op.rows[j][0] - op.o0) * op.row_bytes


def split_sizes(length: int, ranks: int) -> list[int]:
    """torch.tensor_split's part lengths: the first ``length % ranks`` one longer."""
    base, extra = divmod(length, ranks)
    return [base + (1 if r < extra else 0) for r in range(ranks)]


def part_of(info: TensorInfo, dim: int | None, rank: int, ranks: int) -> Part:
    if dim is None:
        return Part(info.name, info.dtype, info.shape, None, 0, 0)
    sizes = split_sizes(info.shape[dim], ranks)
    shape = info.shape[:dim] + (sizes[rank],) + info.shape[dim + 1:]
    return Part(info.name, info.dtype, shape, dim, sum(sizes[:rank]), sizes[rank])


def outer_block(info: TensorInfo, dim: int) -> tuple[int, int]:
    """(number of outer indices before dim, bytes of one outer block)."""
    outer = math.prod(info.shape[:dim])
    return outer, (info.nbytes // outer if outer else 0)


def make_plan(headers: list[Header], dims: dict, wanted: list, chunk: int, slab: int) -> Plan:
    """``dims``: tensor name -> split dimension or None (agreed by all ranks);
    ``wanted``: per rank, the set of names it selected; ``chunk``: the largest
    broadcast (and all-to-all receive) in bytes; ``slab``: the most bytes one
    rank stages for one all-to-all (a single outer row larger than that is
    staged whole)."""
    ranks = len(wanted)
    chunk = max(ALIGN, chunk // ALIGN * ALIGN)
    plan = Plan(ranks, [h.path for h in headers], [{} for _ in range(ranks)],
                [[] for _ in range(ranks)])
    load = [0] * ranks        # bytes each rank reads so far: roots go to the least loaded
    for fi, h in enumerate(headers):
        for info in (h.tensors[n] for n in h.offset_order()):
            needers = tuple(r for r in range(ranks) if info.name in wanted[r])
            if not needers:
                continue
            dim = dims.get(info.name)
            for r in needers:
                plan.parts[r][info.name] = part_of(info, dim, r, ranks)
            if info.nbytes == 0:
                continue
            off = h.data_start + info.begin
            if _plan_direct(plan, fi, off, info, dim, needers, load):
                continue
            if dim is None:
                _plan_broadcasts(plan, fi, off, info, needers, chunk, load)
            else:
                _plan_all_to_all(plan, fi, off, info, dim, needers, chunk, slab, load)
    return plan


def _plan_direct(plan: Plan, fi: int, off: int, info: TensorInfo, dim: int | None,
                 needers: tuple, load: list) -> bool:
    """Adds direct reads when each needer's bytes are one contiguous range
    nobody else needs; False when the tensor needs a collective."""
    if dim is None:
        if len(needers) != 1:
            return False
        plan.direct[needers[0]].append(Read(fi, off, info.nbytes, info.name, 0))
        load[needers[0]] += info.nbytes
        return True
    outer, block = outer_block(info, dim)
    if outer != 1:
        return False
    row = block // info.shape[dim] if info.shape[dim] else 0
    for r in needers:
        part = plan.parts[r][info.name]
        if part.length:
            size = part.length * row
            plan.direct[r].append(Read(fi, off + part.start * row, size, info.name, 0))
            load[r] += size
    return True


def _plan_broadcasts(plan: Plan, fi: int, off: int, info: TensorInfo, needers: tuple,
                     chunk: int, load: list) -> None:
    lo = 0
    while lo < info.nbytes:
        # Cut at a multiple of ``chunk`` in the file, so inner cuts stay aligned.
        hi = min(info.nbytes, ((off + lo) // chunk + 1) * chunk - off)
        root = min(needers, key=lambda r: (load[r], r))
        load[root] += hi - lo
        plan.ops.append(Broadcast(info.name, lo, hi, root, needers,
                                  Read(fi, off + lo, hi - lo, info.name, lo)))
        plan.chunk = max(plan.chunk, hi - lo)
        lo = hi


def _plan_all_to_all(plan: Plan, fi: int, off: int, info: TensorInfo, dim: int,
                     needers: tuple, chunk: int, slab: int, load: list) -> None:
    ranks = plan.ranks
    outer, block = outer_block(info, dim)
    inner = block // info.shape[dim] if info.shape[dim] else 0
    cols = []
    for k in range(ranks):
        part = plan.parts[k].get(info.name) if k in needers else None
        cols.append((part.start * inner, part.length * inner) if part else (0, 0))
    widest = max(c[1] for c in cols)
    per_rank = max(1, slab // block)                    # rows one rank stages
    per_op = max(1, min(per_rank * ranks, chunk // widest if widest else outer))
    o0 = 0
    while o0 < outer:
        o1 = min(outer, o0 + per_op)
        rows = _share_rows(o1 - o0, load, block)
        first, reads = o0, []
        for j, (_, count) in enumerate(rows):
            rows[j] = (first, count)
            reads.append(Read(fi, off + first * block, count * block, "", 0) if count else None)
            first += count
        op = AllToAll(info.name, o0, o1, block, tuple(rows), tuple(cols), tuple(reads))
        plan.ops.append(op)
        plan.slab = max(plan.slab, max(c for _, c in rows) * block)
        plan.recv = max(plan.recv, max(op.recv_bytes(k) for k in range(ranks)))
        o0 = o1


def _share_rows(count: int, load: list, block: int) -> list:
    """Rows of one all-to-all per rank (in rank order, as its output is laid
    out): equal shares, the extra rows to the least loaded ranks."""
    ranks = len(load)
    base, extra = divmod(count, ranks)
    favoured = set(sorted(range(ranks), key=lambda r: (load[r], r))[:extra])
    rows = [(0, base + (1 if r in favoured else 0)) for r in range(ranks)]
    for r, (_, c) in enumerate(rows):
        load[r] += c * block
    return rows
