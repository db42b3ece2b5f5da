# SPDX-License-Identifier: Apache-2.0
"""An inner split's reduce-scatter (_dist_inner) against a stand-in group
whose work copies the result out at every wait(), as gloo's reduce-scatter of
CUDA tensors does (an all-reduce of a copy, then the rank's share copied on
the calling stream): over such a group the work is waited for exactly once,
at once, and the executor's later waits do nothing; over NCCL (collectives
in issue order) the host does not wait for a part that lands in place."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from ufile.safetensors import _dist_inner
from ufile.safetensors._dist_plan import AllToAll

ROWS, ROW = 4, 10


class CopyingWork:
    """Each wait() copies ``result`` into ``out`` again."""

    def __init__(self, out: torch.Tensor, result: torch.Tensor):
        self.out, self.result, self.waits = out, result, 0

    def wait(self) -> bool:
        self.waits += 1
        self.out.copy_(self.result)
        return True


class Group:
    """dist for one rank whose peers all send zero: the reduce-scatter's
    result is this rank's share of its own packed buffer."""

    class ReduceOp:
        SUM = "sum"

    def __init__(self, rank: int, ranks: int):
        self.rank, self.ranks, self.works = rank, ranks, []

    def reduce_scatter_tensor(self, out, buf, op, group, async_op):
        share = buf.numel() // self.ranks
        work = CopyingWork(out, buf[self.rank * share:(self.rank + 1) * share].clone())
        self.works.append(work)
        return work


def _issue(rank: int, cols: tuple, in_order: bool):
    """Rank ``rank`` of 2 holds every row of a 4 x 10-byte tensor and sends
    each rank its columns ``cols``; returns (the work issue gave back, the
    group's works, the destination, the rows)."""
    op = AllToAll("t", 0, ROWS, ROW, ((0, ROWS), (0, 0)) if rank == 0 else ((0, 0), (0, ROWS)),
                  cols, (None, None))
    rows = torch.arange(ROWS * ROW, dtype=torch.uint8)
    g = Group(rank, 2)
    share = _dist_inner.part_bytes(op)
    scratch = torch.zeros(share, dtype=torch.uint8)
    failed: list = []
    ex = SimpleNamespace(in_order=in_order, cuda=True, rank=rank,
                         g=SimpleNamespace(dist=g, group=None),
                         scratch_bytes=lambda n: scratch[:n], _fail=failed.append)
    dest = torch.zeros(ROWS, cols[rank][1], dtype=torch.uint8)
    send = torch.zeros(_dist_inner.send_bytes(op, rank, True), dtype=torch.uint8)
    work = _dist_inner.issue(ex, op, rows, send, dest, True)
    assert failed == []
    return work, g.works, dest, rows.view(ROWS, ROW)


@pytest.mark.parametrize("rank,cols", [(0, ((0, 5), (5, 5))), (1, ((0, 6), (6, 4)))])
def test_out_of_order_group_waited_once(rank, cols):
    """In place (equal parts) and copied out of scratch (rank 1's smaller
    part): one wait, at issue; waiting again copies nothing."""
    work, works, dest, rows = _issue(rank, cols, in_order=False)
    assert [w.waits for w in works] == [1]
    start, size = cols[rank]
    assert torch.equal(dest, rows[:, start:start + size])
    dest.fill_(0)
    work.wait()
    work.wait()
    assert [w.waits for w in works] == [1], "a later wait ran the copy again"
    assert not dest.any(), "a later wait wrote the destination again"


def test_in_order_group_not_waited_for_a_part_in_place():
    work, works, _, _ = _issue(0, ((0, 5), (5, 5)), in_order=True)
    assert work is works[0] and works[0].waits == 0
