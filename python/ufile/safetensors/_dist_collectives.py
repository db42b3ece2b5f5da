# SPDX-License-Identifier: Apache-2.0
"""How an Executor (_dist_exec) issues one collective of its plan: a
broadcast from its root's destination or staging, into each keeper's
destination or scratch memory, or an inner-split all-to-all (_dist_inner)
out of a staging slot. A rank that has failed still joins every collective,
with scratch memory, so no other rank waits for it."""
from __future__ import annotations

from typing import Any

from . import _dist_inner
from ._dist_plan import AllToAll, Broadcast


class Collectives:
    """Mixed into Executor, whose state it uses: g (the group), rank, cuda,
    torch, failed, the scratch buffer (in_order) or ring (gloo), the root ring
    and its index root_of, the staging slots (slots, slot_of, slot_work,
    slot_event), status_stream, _staged, _bytes and _fail."""

    def scratch_bytes(self, n: int) -> Any:
        """``n`` bytes to receive what this rank does not keep. NCCL: one
        buffer, as the collectives run in stream order. gloo runs collectives
        on several threads at once, relays a CPU broadcast from a receiver's
        buffer and writes a CUDA collective's result back on a stream of its
        own, so each in-flight collective gets a buffer of the ring, taken
        once the collective that last used it has completed."""
        if self.in_order:
            return self.scratch[:n]
        i = self.scratch_next % len(self.scratch_ring)
        self.scratch_next += 1
        buf, work = self.scratch_ring[i]
        if work is not None:
            work.wait()
            self.scratch_ring[i][1] = None
        self.scratch_taken = i
        return buf[:n]

    def _broadcast(self, t: int, op: Broadcast) -> Any:
        if self._staged(op):
            entry = self.root_ring[self.root_of[t]]
            work = self.g.dist.broadcast(entry[0][:op.hi - op.lo], self.g.global_rank(op.root),
                                         group=self.g.group, async_op=True)
            if self.cuda:   # the fence, on a stream that holds nothing else up
                with self.torch.cuda.stream(self.status_stream):
                    work.wait()
                    entry[2] = self.torch.cuda.Event()
                    entry[2].record()
            else:
                entry[2] = work
            return work
        if self.rank in op.ranks and not self.failed:
            try:
                lo = op.offset(self.rank)
                buf = self._bytes(op.name)[lo:lo + op.hi - op.lo]
            except Exception as exc:  # noqa: BLE001 - reported at the final agreement
                self._fail(f"allocating tensor {op.name!r}: {type(exc).__name__}: {exc}")
                buf = self.scratch_bytes(op.hi - op.lo)
        else:
            buf = self.scratch_bytes(op.hi - op.lo)
        return self.g.dist.broadcast(buf, self.g.global_rank(op.root), group=self.g.group,
                                     async_op=True)

    def _all_to_all(self, t: int, op: AllToAll) -> Any:
        slot = self.slot_of[t]
        slab, send = self.slots[slot]
        if self.slot_work[slot] is not None:   # the last collective out of ``send``
            self.slot_work[slot].wait()         # CUDA: the side stream waits, not the host
            self.slot_work[slot] = None
        dest = None
        if op.cols[self.rank][1] and not self.failed:
            try:
                dest = self._bytes(op.name).view(-1, op.cols[self.rank][1])[
                    op.part_rows(self.rank)]
            except Exception as exc:  # noqa: BLE001 - reported at the final agreement
                self._fail(f"allocating tensor {op.name!r}: {type(exc).__name__}: {exc}")
        packed = not self.failed
        try:
            work = _dist_inner.issue(self, op, slab, send, dest, packed)
        finally:
            if self.cuda:   # the fence of ``slab``: behind its packing
                ev = self.torch.cuda.Event()
                ev.record()
                self.slot_event[slot] = ev
        self.slot_work[slot] = work
        return work

