# SPDX-License-Identifier: Apache-2.0
"""Where a collective load's walk pauses so that iter_checkpoint holds a
bounded amount of output: the plan's reads and collectives, in file order,
are cut into segments such that no rank holds more than ``budget`` bytes of
tensors it has allocated and not yet yielded. At the end of a segment every
rank of the group issues a status all-reduce, waits for it (and for its own
reads so far), yields every tensor that is complete, and only then allocates
the next segment's tensors: once yielded, a tensor is the consumer's (kept or
dropped), never the iterator's.

Computed from the plan alone (every rank's parts, reads and collectives), so
every rank cuts at the same places. A tensor larger than the budget, or one
still being filled when the budget runs out, is held anyway: the bound is
``budget`` or the largest such tensor with what is held beside it."""
from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from ._dist_plan import Broadcast, Plan
from ._format import DTYPES


@dataclass(frozen=True)
class Segment:
    first_op: int          # the plan's ops [first_op, end_op) are issued in it
    end_op: int
    end: tuple | None      # (file, offset) where it ends; None: the last
    alloc: int             # this rank's tensors (in ``order``) allocated by its end


def part_bytes(part) -> int:
    return math.prod(part.shape) * DTYPES[part.dtype][0]


def _items(plan: Plan) -> list:
    """(position, kind, op index or rank, read or None) of every op and every
    rank's direct read, in the order the walk reaches them."""
    items = [(plan.position(op), 1, t, None) for t, op in enumerate(plan.ops)]
    items += [((rd.file, rd.offset), 0, r, rd) for r in range(plan.ranks)
              for rd in plan.direct[r]]
    items.sort(key=lambda x: (x[0], x[1], x[2]))
    return items


def _touches(plan: Plan, item: tuple) -> list:
    """(rank, tensor) pairs that an item writes into."""
    _, kind, index, rd = item
    if kind == 0:
        return [(index, rd.dest)]
    op = plan.ops[index]
    if isinstance(op, Broadcast):
        return [(r, op.name) for r in op.ranks]
    return [(r, op.name) for r, (_, size) in enumerate(op.cols) if size]


def segments(plan: Plan, rank: int, budget: int | None) -> tuple[list, list]:
    """(this rank's tensors in the order the walk first writes them, the
    segments); ``budget`` None: one segment."""
    items = _items(plan)
    touched = [_touches(plan, it) for it in items]
    first: list = [{} for _ in range(plan.ranks)]
    last: list = [{} for _ in range(plan.ranks)]
    for i, pairs in enumerate(touched):
        for r, name in pairs:
            first[r].setdefault(name, i)
            last[r][name] = i
    cuts = [] if budget is None else _cuts(plan, touched, first, last, budget)
    order = sorted(first[rank], key=lambda n: (first[rank][n], n))
    firsts = [first[rank][n] for n in order]
    ops_before = list(itertools.accumulate((it[1] for it in items), initial=0))
    segs, lo = [], 0
    for c in cuts + [len(items)]:
        end = items[c][0] if c < len(items) else None
        segs.append(Segment(lo, ops_before[c], end, bisect.bisect_left(firsts, c)))
        lo = ops_before[c]
    return order, segs


def _cuts(plan: Plan, touched: list, first: list, last: list, budget: int) -> list:
    """Item indices before which a segment ends: where a rank's next tensor
    would take it over ``budget`` and tensors it holds are complete."""
    held: list = [{} for _ in range(plan.ranks)]
    total = [0] * plan.ranks
    cuts = []
    for i, pairs in enumerate(touched):
        for r, name in pairs:
            if first[r][name] != i:
                continue
            size = part_bytes(plan.parts[r][name])
            if total[r] + size > budget and any(last[r][n] < i for n in held[r]):
                if not cuts or cuts[-1] != i:
                    cuts.append(i)
                for k in range(plan.ranks):
                    held[k] = {n: b for n, b in held[k].items() if last[k][n] >= i}
                    total[k] = sum(held[k].values())
            held[r][name] = size
            total[r] += size
    return cuts
