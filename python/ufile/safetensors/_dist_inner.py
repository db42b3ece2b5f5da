# SPDX-License-Identifier: Apache-2.0
"""Tensors split along an inner dimension (row-parallel weights): one run of
whole outer rows (an AllToAll of the plan), completed so that each rank
receives only its own columns, straight into its tensor.

Every rank has read its share of the run's rows into staging (``slab``) and
packs, for each receiver, that receiver's columns of those of its rows the
receiver wants (``AllToAll.sent_rows``), where they go in the receiver's
part. Then:
- CUDA: a reduce-scatter of bytes (uint8 sum) over the packed buffer, zero
  wherever this rank has no rows: each byte of a part comes from exactly one
  rank and the others add zero, so the sum is the bytes themselves. Not
  all_to_all: NCCL connects point-to-point peers at a process's first send or
  receive, which held the host for 1.2 s on 4 H200 (a first load of 1.6 s
  instead of 0.3 s), while ring collectives use the connections already made.
  (gloo carries it out as an all-reduce, waited for at once: see below.)
- CPU (gloo, whose reduce-scatter torch 1.13 lacks): all_to_all_single of
  the packed columns.
A failed rank contributes zeros (CUDA) or whatever its staging holds (CPU):
every rank raises at the final agreement either way."""
from __future__ import annotations

from typing import Any

from ._dist_plan import AllToAll


def part_bytes(op: AllToAll) -> int:
    """Bytes of the largest receiver's part of the run: the reduce-scatter's
    equal share."""
    return max(op.recv_bytes(k) for k in range(len(op.cols)))


def send_bytes(op: AllToAll, rank: int, cuda: bool) -> int:
    """Staging a rank packs into for ``op``."""
    return len(op.cols) * part_bytes(op) if cuda else op.send_bytes(rank)


def issue(ex: Any, op: AllToAll, slab: Any, send: Any, dest: Any, packed: bool) -> Any:
    """Packs this rank's rows (when ``packed``) and starts the collective;
    ``dest`` is this rank's part of the run's rows, or None (it needs none, or
    it failed). Returns the collective's Work."""
    if ex.cuda:
        return _reduce_scatter(ex, op, slab, send, dest, packed)
    return _all_to_all(ex, op, slab, send, dest, packed)


def _rows(ex: Any, op: AllToAll, slab: Any) -> Any:
    from . import _dist_exec
    if _dist_exec.before_pack is not None:
        _dist_exec.before_pack()
    count = op.rows[ex.rank][1]
    return slab[:count * op.row_bytes].view(count, op.row_bytes)


def _reduce_scatter(ex: Any, op: AllToAll, slab: Any, send: Any, dest: Any,
                    packed: bool) -> Any:
    share = part_bytes(op)
    buf = send[:len(op.cols) * share]
    buf.zero_()
    first, count = op.rows[ex.rank]
    if packed and count:
        try:
            rows = _rows(ex, op, slab)
            for k, (start, size) in enumerate(op.cols):
                a, b = op.sent_rows(ex.rank, k)
                if size and a < b:
                    lo, hi = op.recv_rows(k)
                    part = buf[k * share:k * share + (hi - lo) * size].view(hi - lo, size)
                    part[a - lo:b - lo].copy_(rows[a - first:b - first, start:start + size])
        except Exception as exc:  # noqa: BLE001 - reported at the final agreement
            ex._fail(f"packing tensor {op.name!r}: {type(exc).__name__}: {exc}")
            buf.zero_()
    mine = op.recv_bytes(ex.rank)
    in_place = dest is not None and mine == share
    out = dest.reshape(-1) if in_place else ex.scratch_bytes(share)
    dist = ex.g.dist
    scatter = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    work = scatter(out, buf, op=dist.ReduceOp.SUM, group=ex.g.group, async_op=True)
    if not ex.in_order:
        # gloo: an all-reduce of a copy of ``buf``, whose wait() copies this
        # rank's share into ``out`` on the calling stream, again at each call.
        # Waited for once, here, so the result lands in stream order on the
        # side stream; the host waits for the all-reduce.
        work.wait()
        work = _Waited()
    if dest is not None and not in_place:   # a smaller uneven part: copied behind it
        work.wait()
        dest.reshape(-1).copy_(out[:mine])
    return work


class _Waited:
    """A collective already waited for: waiting again does nothing."""

    def wait(self) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


def _all_to_all(ex: Any, op: AllToAll, slab: Any, send: Any, dest: Any,
                packed: bool) -> Any:
    first, count = op.rows[ex.rank]
    n = len(op.cols)
    if packed and count:
        try:
            rows, pos = _rows(ex, op, slab), 0
            for k, (start, size) in enumerate(op.cols):
                a, b = op.sent_rows(ex.rank, k)
                if size and a < b:
                    send[pos:pos + (b - a) * size].view(b - a, size).copy_(
                        rows[a - first:b - first, start:start + size])
                    pos += (b - a) * size
        except Exception as exc:  # noqa: BLE001 - reported at the final agreement
            ex._fail(f"packing tensor {op.name!r}: {type(exc).__name__}: {exc}")
    mine = op.cols[ex.rank][1]
    out = dest.reshape(-1) if dest is not None else ex.scratch_bytes(op.recv_bytes(ex.rank))

    def rows_between(j: int, k: int) -> int:
        a, b = op.sent_rows(j, k)
        return b - a
    return ex.g.dist.all_to_all_single(
        out, send[:op.send_bytes(ex.rank)],
        output_split_sizes=[rows_between(j, ex.rank) * mine for j in range(n)],
        input_split_sizes=[rows_between(ex.rank, k) * c for k, (_, c) in enumerate(op.cols)],
        group=ex.g.group, async_op=True)
