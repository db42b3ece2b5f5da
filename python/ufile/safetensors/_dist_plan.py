# SPDX-License-Identifier: Apache-2.0
"""The plan of a collective load: who reads which byte range of which file, and
which collectives complete the tensors. Plain data, computed identically on
every rank from the same inputs (the checkpoint's headers and what each rank
wants), so it needs no process group and is unit-tested on its own.

The input is what each rank wants: per part, a box of a checkpoint tensor (one
(start, stop) a dimension; ``Want``). Replicas, splits along any dimension, a
mesh's parts, fused and padded destinations are all boxes; the ``shard=`` rules
are one producer of them (``wants_from_dims``). Each byte any rank needs is
read exactly once, by one rank, and lands where it stays wherever it can:
- *direct*: a byte range of a tensor that only one rank wants (a whole tensor,
  a part contiguous in the file such as a dimension-0 split) is read straight
  into its part; no collective;
- *broadcast*: a byte range several ranks want (replicas; the same part on
  several ranks of a 2-D mesh) is cut into chunks of at most ``chunk`` bytes;
  one of those ranks (the one with the fewest bytes to read so far) reads
  each chunk straight into its part and broadcasts it into the others' (a
  rank that needs none of it receives into scratch);
- *all-to-all*: parts strided in the file (a split along an inner dimension)
  view the tensor as rows cut at that dimension; runs of the rows someone
  wants are read in equal shares by every rank into staging, packed so that
  each receiver's bytes are contiguous, and one collective delivers each
  rank's bytes straight into its part.
Collectives (``ops``) follow the files' order and every rank issues them in
that order."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from . import _dist_box
from ._format import DTYPES, Header, SafetensorError, TensorInfo

ALIGN = 4096                 # chunk cuts fall on 4 KiB file offsets (O_DIRECT)


@dataclass(frozen=True)
class Want:
    """What a rank asks for of checkpoint tensor ``name``: the box ``box``
    (one (start, stop) a dimension), delivered as one contiguous tensor."""
    name: str
    box: tuple


@dataclass(frozen=True)
class Part:
    """What one rank receives of one tensor: box ``box`` of tensor ``name``,
    as a contiguous tensor of shape ``shape`` (the box's extents)."""
    name: str
    dtype: str
    shape: tuple
    box: tuple


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
    """Bytes [lo, hi) of part ``name`` of the root: ``root`` reads them into
    its part (``read``) and broadcasts them; ``ranks`` keep them, each at
    ``at[i]`` in its part (empty tuple: at ``lo``, as the root). A root that
    keeps none of them (its host reads for a host that lacks the files)
    reads into staging (``read.dest`` "")."""
    name: str
    lo: int
    hi: int
    root: int
    ranks: tuple
    read: Read
    at: tuple = ()

    def offset(self, rank: int) -> int:
        """Where a keeper's part holds the bytes."""
        return self.at[self.ranks.index(rank)] if self.at else self.lo


@dataclass(frozen=True)
class AllToAll:
    """Outer rows [o0, o1) of tensor ``name`` (viewed as rows of ``row_bytes``:
    a part cuts a dimension of it): rank j reads rows ``rows[j]`` = (first,
    count) into staging (``reads[j]``, None when count is 0) and sends rank k
    the bytes ``cols[k]`` = (offset in a row, size; size 0: k needs none) of
    each row k wants; rank k's part holds the rows ``want[k]`` = (first, end)
    (empty tuple: every row) and receives those of [o0, o1) in place."""
    name: str
    o0: int
    o1: int
    row_bytes: int
    rows: tuple
    cols: tuple
    reads: tuple
    want: tuple = ()

    def recv_rows(self, k: int) -> tuple:
        """(first, end) of the rows of [o0, o1) rank k receives."""
        if not self.cols[k][1]:
            return self.o0, self.o0
        if not self.want:
            return self.o0, self.o1
        a, b = self.want[k]
        lo, hi = max(a, self.o0), min(b, self.o1)
        return (lo, hi) if lo < hi else (self.o0, self.o0)

    def part_rows(self, k: int) -> slice:
        """Rows of rank k's part (viewed as rows of ``cols[k]`` bytes) this op fills."""
        lo, hi = self.recv_rows(k)
        first = self.want[k][0] if self.want else 0
        return slice(lo - first, hi - first)

    def sent_rows(self, j: int, k: int) -> tuple:
        """(first, end) of the rows rank j reads that rank k receives."""
        lo, hi = self.recv_rows(k)
        first, count = self.rows[j]
        a, b = max(lo, first), min(hi, first + count)
        return (a, b) if a < b else (a, a)

    def send_bytes(self, rank: int) -> int:
        total = 0
        for k, (_, size) in enumerate(self.cols):
            a, b = self.sent_rows(rank, k)
            total += (b - a) * size
        return total

    def recv_bytes(self, rank: int) -> int:
        lo, hi = self.recv_rows(rank)
        return (hi - lo) * self.cols[rank][1]


@dataclass
class Plan:
    ranks: int
    files: list                    # paths
    parts: list                    # per rank: {part key: Part}, checkpoint order
    direct: list                   # per rank: list[Read], file order
    ops: list = field(default_factory=list)   # Broadcast | AllToAll, issue order
    readers: tuple | None = None   # ranks that may read (None: all)
    chunk: int = 0                 # largest broadcast chunk (bytes)
    slab: int = 0                  # largest all-to-all staging of one rank (bytes)
    recv: int = 0                  # largest receive of one op into scratch (bytes)

    def may_read(self, rank: int) -> bool:
        return self.readers is None or rank in self.readers

    def staged_roots(self, rank: int) -> bool:
        """Whether ``rank`` broadcasts bytes it keeps none of (from staging)."""
        return any(isinstance(op, Broadcast) and op.root == rank and rank not in op.ranks
                   for op in self.ops)

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
    return _dist_box.tensor_split_sizes(length, ranks)


def box_for(shape: tuple, split: Any, rank: int, ranks: int) -> tuple:
    """The box a ``shard`` rule's value gives rank ``rank``: None, whole; a
    dimension, ``torch.tensor_split``'s part; an object with ``box(shape,
    rank, ranks)`` (a mesh layout, _dist_mesh), its box."""
    if split is None:
        return _dist_box.whole(shape)
    if isinstance(split, int):
        return _dist_box.cut(_dist_box.whole(shape), split, rank, ranks, "tensor_split")
    return split.box(shape, rank, ranks)


def wants_from_dims(headers: list[Header], dims: dict, wanted: list) -> list:
    """Per rank, {name: Want} from the agreed split of every tensor and each
    rank's selection: the ``shard=`` / ``select=`` rules as boxes."""
    out: list = [{} for _ in wanted]
    for h in headers:
        for info in (h.tensors[n] for n in h.offset_order()):
            split = dims.get(info.name)
            same = Want(info.name, _dist_box.whole(info.shape)) if split is None else None
            for r, names in enumerate(wanted):
                if info.name in names:
                    out[r][info.name] = same if same is not None else \
                        Want(info.name, box_for(info.shape, split, r, len(wanted)))
    return out


def make_plan(headers: list[Header], dims: dict, wanted: list, chunk: int, slab: int,
              wants: list | None = None, readers: tuple | None = None) -> Plan:
    """``dims``: tensor name -> how it is split (box_for; agreed by all ranks);
    ``wanted``: per rank, the set of names it selected; or, instead of both,
    ``wants``: per rank, {part key: Want}. ``chunk``: the largest broadcast (and
    all-to-all receive) in bytes; ``slab``: the most bytes one rank stages for
    one all-to-all (a single outer row larger than that is staged whole).
    Raises SafetensorError for a Want naming no tensor of the checkpoint or a
    box the tensor does not have. ``readers``: the ranks that may read the
    files (those of hosts that hold them; None: every rank): the others
    receive every byte they want from one of them."""
    checked = wants is None   # the rules' boxes fit by construction
    if wants is None:
        wants = wants_from_dims(headers, dims, wanted)
    ranks = len(wants)
    chunk = max(ALIGN, chunk // ALIGN * ALIGN)
    plan = Plan(ranks, [h.path for h in headers], [{} for _ in range(ranks)],
                [[] for _ in range(ranks)],
                readers=None if readers is None else tuple(sorted(readers)))
    by_name = _by_name(headers, wants, checked)
    load = [0] * ranks        # bytes each rank reads so far: roots go to the least loaded
    for fi, h in enumerate(headers):
        for info in (h.tensors[n] for n in h.offset_order()):
            entries = by_name.pop(info.name, [])
            made: dict = {}   # box -> Part: ranks asking for the same box share one
            for r, key, box in entries:
                part = made.get(box)
                if part is None:
                    part = made[box] = Part(info.name, info.dtype, _dist_box.extents(box), box)
                plan.parts[r][key] = part
            if info.nbytes == 0:
                continue
            for layer in _layers(entries):
                t = _Tensor(fi, h.data_start + info.begin, info, layer)
                if t.ranges is not None:
                    _plan_ranges(plan, t, chunk, load)
                else:
                    _plan_all_to_all(plan, t, chunk, slab, load)
    for reads in plan.direct:
        reads.sort(key=lambda rd: (rd.file, rd.offset))
    return plan


def _by_name(headers: list[Header], wants: list, checked: bool) -> dict:
    infos = {n: i for h in headers for n, i in h.tensors.items()}
    out: dict = {}
    for r, mine in enumerate(wants):
        for key, w in mine.items():
            info = infos.get(w.name)
            if checked:
                out.setdefault(w.name, []).append((r, key, w.box))
                continue
            if info is None:
                raise SafetensorError(f"rank {r} asks for tensor {w.name!r} (as {key!r}), "
                                      f"which the checkpoint does not have")
            try:
                _dist_box.check(w.box, info.shape, f"rank {r}, tensor {w.name!r}")
            except ValueError as exc:
                raise SafetensorError(str(exc)) from None
            out.setdefault(w.name, []).append((r, key, w.box))
    return out


def _layers(entries: list) -> list:
    """The non-empty wants of one tensor, one layer a part key: ranks name a
    tensor's part alike (its name), but a rank asking for one tensor twice
    (two destinations) names the second part otherwise, and its bytes are
    read once more."""
    layers: dict = {}
    for r, key, box in entries:
        if not _dist_box.is_empty(box):
            layers.setdefault(key, []).append((r, key, box))
    return list(layers.values())


class _Tensor:
    """One layer of one tensor: its file, offset, info and wants; ``ranges``,
    per want its (first byte, end) when every want is contiguous, else None."""

    def __init__(self, fi: int, off: int, info: TensorInfo, wants: list):
        self.fi, self.off, self.info, self.wants = fi, off, info, wants
        size = DTYPES[info.dtype][0]
        ranges = [_dist_box.byte_range(box, info.shape, size) for _, _, box in wants]
        self.ranges = None if any(r is None for r in ranges) else ranges


def _plan_ranges(plan: Plan, t: _Tensor, chunk: int, load: list) -> None:
    """Contiguous wants: each byte range wanted by one rank is read directly;
    one wanted by several, by one of them, and broadcast."""
    for lo, hi, cover in _spans(t.ranges):
        groups: dict = {}    # part key: [(rank, offset in its part)]
        for i in cover:
            r, key, _ = t.wants[i]
            groups.setdefault(key, []).append((r, lo - t.ranges[i][0]))
        for key, keepers in groups.items():
            if len(keepers) == 1 and plan.may_read(keepers[0][0]):
                r, at = keepers[0]
                plan.direct[r].append(Read(t.fi, t.off + lo, hi - lo, key, at))
                load[r] += hi - lo
            else:
                _plan_broadcasts(plan, t, key, lo, hi, keepers, chunk, load)


def _spans(ranges: list) -> list:
    """(lo, hi, indices of the ranges covering it) over the union of the
    non-empty ``ranges``, in order; neighbours with the same cover merged."""
    if all(r == ranges[0] for r in ranges):    # replicas
        return [(ranges[0][0], ranges[0][1], tuple(range(len(ranges))))]
    starts = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    if all(ranges[a][1] <= ranges[b][0] for a, b in zip(starts, starts[1:])):   # disjoint
        return [(ranges[i][0], ranges[i][1], (i,)) for i in starts]
    return _sweep(ranges, starts)


def _sweep(ranges: list, starts: list) -> list:
    """_spans for any ranges (``starts``: their indices by start): a sweep
    over their ends."""
    spans: list = []
    cuts = sorted({p for rng in ranges for p in rng})
    active: set = set()
    nxt = 0
    for lo, hi in zip(cuts, cuts[1:]):
        active = {i for i in active if ranges[i][1] > lo}
        while nxt < len(starts) and ranges[starts[nxt]][0] <= lo:
            active.add(starts[nxt])
            nxt += 1
        cover = tuple(sorted(active))
        if spans and spans[-1][2] == cover and spans[-1][1] == lo:
            spans[-1] = (spans[-1][0], hi, cover)
        elif cover:
            spans.append((lo, hi, cover))
    return spans


def _plan_broadcasts(plan: Plan, t: _Tensor, key: str, lo: int, end: int, keepers: list,
                     chunk: int, load: list) -> None:
    """Bytes [lo, end) of the tensor, at keepers' (rank, offset in its part)."""
    ranks = tuple(r for r, _ in keepers)
    able = [r for r in ranks if plan.may_read(r)] or list(plan.readers)
    first = lo
    while lo < end:
        # Cut at a multiple of ``chunk`` in the file, so inner cuts stay aligned.
        hi = min(end, ((t.off + lo) // chunk + 1) * chunk - t.off)
        root = min(able, key=lambda r: (load[r], r))
        load[root] += hi - lo
        at = tuple(a + lo - first for _, a in keepers)
        if root in ranks:
            plo = at[ranks.index(root)]
            same = all(a == plo for a in at)
            read = Read(t.fi, t.off + lo, hi - lo, key, plo)
        else:   # into the root's staging; the keepers' offsets are explicit
            plo, same, read = at[0], False, Read(t.fi, t.off + lo, hi - lo, "", 0)
        plan.ops.append(Broadcast(key, plo, plo + hi - lo, root, ranks, read,
                                  () if same else at))
        plan.chunk = max(plan.chunk, hi - lo)
        lo = hi


def _plan_all_to_all(plan: Plan, t: _Tensor, chunk: int, slab: int, load: list) -> None:
    """Wants that are strided in the file: the tensor as rows cut at the
    innermost dimension any want cuts; runs of the rows someone wants, each
    read in equal shares by every rank and delivered by one collective."""
    info, ranks = t.info, plan.ranks
    dim = max(_dist_box.inner_dim(box, info.shape) for _, _, box in t.wants)
    outer = math.prod(info.shape[:dim])
    block = info.nbytes // outer
    cols, want = [(0, 0)] * ranks, [(0, 0)] * ranks
    key = t.wants[0][1]
    for r, k, box in t.wants:
        rows = _dist_box.as_rows(box, info.shape, dim, DTYPES[info.dtype][0])
        if rows is None:
            raise SafetensorError(f"rank {r} asks for part {list(box)} of tensor "
                                  f"{info.name!r} (shape {list(info.shape)}), whose rows are "
                                  f"not one range when it is cut along dimension {dim} for "
                                  f"the other ranks: ask for it in pieces")
        want[r], cols[r] = rows
    widest = max(c[1] for c in cols)
    readers = ranks if plan.readers is None else len(plan.readers)
    # A staging slot holds this rank's rows and a packed run of up to
    # ``ranks`` receivers' parts (_dist_inner), each at most the widest part
    # of every reader's rows: (ranks + 1) slabs when the parts are disjoint.
    # Parts shared by several ranks (a 2-D mesh) are wider: fewer rows then.
    per_rank = max(1, slab * (ranks + 1) // (block + ranks * readers * widest))
    per_op = max(1, min(per_rank * readers, chunk // widest))
    for u0, u1 in _union([w for w, c in zip(want, cols) if c[1]]):
        o0 = u0
        while o0 < u1:
            o1 = min(u1, o0 + per_op)
            rows = _share_rows(o1 - o0, load, block, plan.readers)
            first, reads = o0, []
            for j, (_, count) in enumerate(rows):
                rows[j] = (first, count)
                reads.append(Read(t.fi, t.off + first * block, count * block, "", 0)
                             if count else None)
                first += count
            mine = tuple(c if a < o1 and o0 < b else (0, 0) for c, (a, b) in zip(cols, want))
            op = AllToAll(key, o0, o1, block, tuple(rows), mine, tuple(reads), tuple(want))
            plan.ops.append(op)
            plan.slab = max(plan.slab, max(c for _, c in rows) * block)
            plan.recv = max(plan.recv, max(op.recv_bytes(k) for k in range(ranks)))
            o0 = o1


def _union(spans: list) -> list:
    out: list = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _share_rows(count: int, load: list, block: int, readers: tuple | None = None) -> list:
    """Rows of one all-to-all per rank (in rank order, as its output is laid
    out): equal shares among the ranks that may read, the extra rows to the
    least loaded of them."""
    able = list(range(len(load))) if readers is None else list(readers)
    base, extra = divmod(count, len(able))
    favoured = set(sorted(able, key=lambda r: (load[r], r))[:extra])
    rows = [(0, base + (1 if r in favoured else 0)) if r in able else (0, 0)
            for r in range(len(load))]
    for r, (_, c) in enumerate(rows):
        load[r] += c * block
    return rows
