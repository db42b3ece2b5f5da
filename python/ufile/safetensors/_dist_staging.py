# SPDX-License-Identifier: Apache-2.0
"""The collective load's device memory beyond its outputs: how
``max_device_bytes`` is split between the broadcast chunk and the all-to-all
slots (the planner sizes its collectives to fit), and what a rank allocates
to carry out a plan (_dist_exec)."""
from __future__ import annotations

import dataclasses

from . import _dist_inner
from ._dist_plan import AllToAll, Plan

SCRATCH_RING = 2      # gloo: receive buffers, one per collective in flight (gloo runs two)


def split_staging(total: int, depth: int, ranks: int) -> tuple[int, int]:
    """(broadcast chunk, all-to-all slab) within ``total`` bytes: a quarter for
    the chunk (the scratch a rank receives into when it needs none of a chunk),
    the rest, but 1/32 for the small allocations of the exchange and status,
    for ``depth`` staging slots, each a slab of rows and a packed run of up to
    ``ranks`` slabs (_dist_inner)."""
    chunk = total // 4
    return chunk, (total - chunk - total // 32) // (depth * (ranks + 1))


@dataclasses.dataclass(frozen=True)
class Staging:
    """A rank's staging for a plan: ``scratch`` bytes (one buffer where the
    collectives complete in issue order, NCCL; else a ring of SCRATCH_RING),
    ``roots`` buffers of ``plan.chunk`` (broadcasts read for ranks that lack
    the files) and ``slots`` all-to-all slots of ``plan.slab`` + ``send``
    bytes."""
    scratch: int
    roots: int
    slots: int
    send: int

    def nbytes(self, plan: Plan, ring: bool) -> int:
        scratch = self.scratch * (SCRATCH_RING if ring else 1)
        return scratch + self.roots * plan.chunk + self.slots * (plan.slab + self.send)


def staging(plan: Plan, rank: int, depth: int, cuda: bool) -> Staging:
    """What ``rank`` allocates to carry out ``plan`` with ``depth`` slots."""
    # scratch: what this rank receives and does not keep (a failed rank: anything)
    scratch = max(plan.chunk, plan.recv) if plan.ops else 0
    a2a = [op for op in plan.ops if isinstance(op, AllToAll)]
    send = max((_dist_inner.send_bytes(op, rank, cuda) for op in a2a), default=0)
    return Staging(scratch, depth if plan.staged_roots(rank) else 0, min(depth, len(a2a)), send)
