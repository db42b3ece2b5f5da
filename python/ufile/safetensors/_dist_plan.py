# SPDX-License-Identifier: Apache-2.0
"""The plan of a collective load: who reads which byte range of which file, and
who receives it. Plain data, computed identically on every rank from the same
inputs (the checkpoint's headers, the agreed split dimensions, every rank's
selection), so it needs no process group and is unit-tested on its own.

Each byte any rank needs is read exactly once:
- a rank's own contiguous part (a whole tensor only it needs, or its part of a
  tensor split along a dimension whose leading dimensions are all 1, such as
  dimension 0) is a *direct* read into its own tensor;
- every other needed byte (tensors two or more ranks need whole, and tensors
  split along an inner dimension, whose parts are strided in the file) goes
  into the *gather stream*: cut into rounds of at most ``round_bytes``, each
  round split into equal 4 KiB-aligned slots, rank k reading slot k into its
  staging buffer; an all-gather then gives every rank the whole round, and
  each rank copies out what it needs (a split tensor's part with a strided
  copy). A round cuts a split tensor only between its outer blocks, so every
  piece holds whole rows of the split dimension."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ._format import Header, TensorInfo

SLOT_ALIGN = 4096      # slot boundaries: O_DIRECT-friendly file offsets
STRIDED_ALIGN = 16     # staged offset of a strided piece: any dtype can view it


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
    """One contiguous range of a file, read into a tensor (direct) or into the
    rank's staging buffer (a slot of a round)."""
    file: int              # index into the plan's files
    offset: int            # file offset
    size: int
    dest: str              # tensor name (direct) or "" (staging)
    dest_offset: int       # byte offset in that tensor, or in the round's staging


@dataclass(frozen=True)
class Delivery:
    """Bytes [lo, hi) of tensor ``name`` sit at ``staged`` in a gathered round;
    ``ranks`` need them (or their part of them)."""
    name: str
    staged: int
    lo: int
    hi: int
    ranks: tuple


@dataclass
class Round:
    size: int                      # bytes staged (slot * ranks >= size)
    slot: int                      # bytes each rank reads (its slot)
    reads: list                    # per rank: list[Read] into staging
    deliveries: list = field(default_factory=list)


@dataclass
class Plan:
    ranks: int
    files: list                    # paths
    parts: list                    # per rank: {name: Part}, checkpoint order
    direct: list                   # per rank: list[Read]
    rounds: list                   # list[Round]
    staging: int                   # bytes of one staging buffer (largest round)

    def read_bytes(self, rank: int) -> int:
        """Bytes rank reads from files (direct and slots)."""
        return (sum(r.size for r in self.direct[rank]) +
                sum(r.size for rd in self.rounds for r in rd.reads[rank]))


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


def make_plan(headers: list[Header], dims: dict, wanted: list, round_bytes: int) -> Plan:
    """``dims``: tensor name -> split dimension or None (agreed by all ranks);
    ``wanted``: per rank, the set of names it selected; ``round_bytes``: the
    most bytes a round stages (at least one slot per rank)."""
    ranks = len(wanted)
    plan = Plan(ranks, [h.path for h in headers], [{} for _ in range(ranks)],
                [[] for _ in range(ranks)], [], 0)
    stream = []  # (file index, TensorInfo, file offset of its data, needers)
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
            if not _plan_direct(plan, fi, h.data_start + info.begin, info, dim, needers):
                stream.append((fi, info, h.data_start + info.begin, needers))
    _plan_rounds(plan, stream, max(round_bytes, ranks * SLOT_ALIGN))
    return plan


def _plan_direct(plan: Plan, fi: int, off: int, info: TensorInfo, dim: int | None,
                 needers: tuple) -> bool:
    """Adds direct reads when each needer's bytes are one contiguous range
    nobody else needs; False when the tensor goes into the gather stream."""
    if dim is None:
        if len(needers) != 1:
            return False
        plan.direct[needers[0]].append(Read(fi, off, info.nbytes, info.name, 0))
        return True
    outer, block = outer_block(info, dim)
    if outer != 1:
        return False
    row = block // info.shape[dim] if info.shape[dim] else 0
    for r in needers:
        part = plan.parts[r][info.name]
        if part.length:
            plan.direct[r].append(Read(fi, off + part.start * row, part.length * row,
                                       info.name, 0))
    return True


class _RoundBuilder:
    def __init__(self, plan: Plan, round_bytes: int):
        self.plan, self.cap = plan, round_bytes
        self.pieces: list = []   # (file, file offset, size, staged offset)
        self.deliveries: list = []
        self.size = 0

    def add(self, fi: int, off: int, size: int, staged: int, d: Delivery) -> None:
        self.pieces.append((fi, off, size, staged))
        self.deliveries.append(d)
        self.size = staged + size

    def close(self) -> None:
        if not self.pieces:
            return
        ranks = self.plan.ranks
        slot = -(-self.size // ranks)
        slot = -(-slot // SLOT_ALIGN) * SLOT_ALIGN
        reads = [_slot_reads(self.pieces, k * slot, min((k + 1) * slot, self.size))
                 for k in range(ranks)]
        self.plan.rounds.append(Round(self.size, slot, reads, self.deliveries))
        self.plan.staging = max(self.plan.staging, slot * ranks)
        self.pieces, self.deliveries, self.size = [], [], 0


def _plan_rounds(plan: Plan, stream: list, round_bytes: int) -> None:
    b = _RoundBuilder(plan, round_bytes)
    for fi, info, off, needers in stream:
        dim = plan.parts[needers[0]][info.name].dim
        strided = dim is not None
        block = outer_block(info, dim)[1] if strided else 1
        lo = 0
        while lo < info.nbytes:
            staged = -(-b.size // STRIDED_ALIGN) * STRIDED_ALIGN if strided else b.size
            take = min(info.nbytes - lo, round_bytes - staged) // block * block
            if take <= 0:
                if b.pieces:
                    b.close()
                    continue
                take = block  # one outer block larger than a round: a round of its own
            b.add(fi, off + lo, take, staged, Delivery(info.name, staged, lo, lo + take, needers))
            lo += take
            if b.size >= round_bytes:
                b.close()
    b.close()


def _slot_reads(pieces: list, lo: int, hi: int) -> list:
    """The file ranges staged at [lo, hi), adjacent ones merged."""
    out: list = []
    for fi, off, size, staged in pieces:
        a, z = max(lo, staged), min(hi, staged + size)
        if a >= z:
            continue
        foff = off + (a - staged)
        if out and out[-1].file == fi and out[-1].offset + out[-1].size == foff \
                and out[-1].dest_offset + out[-1].size == a:
            prev = out.pop()
            out.append(Read(fi, prev.offset, prev.size + z - a, "", prev.dest_offset))
        else:
            out.append(Read(fi, foff, z - a, "", a))
    return out
