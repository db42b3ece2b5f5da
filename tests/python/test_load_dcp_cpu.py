# SPDX-License-Identifier: Apache-2.0
"""UfileStorageReader driven by hand, as dcp.load drives it, in one process
(no group): the metadata read from the headers, read items for whole tensors,
row and column chunks (strided destinations) and a widening cast, each landing
in the view the planner resolves; non-tensor items refused. torch 1.x has no
torch.distributed.checkpoint: there the DCP types the reader uses are stood in
by dataclasses with the same fields (test_load_dcp_gpu.py runs the real
dcp.load on torch 2.x)."""
from __future__ import annotations

import dataclasses
import os

import pytest
import torch

import dcp_stand_in
import save_dist_cases as cases
from ufile.safetensors import save_checkpoint

dcp_stand_in.install()
from ufile.safetensors._load_dcp import UfileStorageReader  # noqa: E402
from torch.distributed.checkpoint.planner import LoadItemType, LoadPlan  # noqa: E402


@dataclasses.dataclass(frozen=True)
class _Index:
    fqn: str
    offset: tuple = ()


@dataclasses.dataclass(frozen=True)
class _ReadItem:
    type: object
    dest_index: _Index
    dest_offsets: torch.Size
    storage_index: _Index
    storage_offsets: torch.Size
    lengths: torch.Size


class _Planner:
    """DCP's default planner's part: the destination narrowed to the item."""

    def __init__(self, state: dict):
        self.state, self.committed = state, []

    def resolve_tensor(self, item: _ReadItem) -> torch.Tensor:
        t = self.state[item.dest_index.fqn]
        for d, (o, n) in enumerate(zip(item.dest_offsets, item.lengths)):
            t = t.narrow(d, o, n)
        return t

    def commit_tensor(self, item: _ReadItem, tensor: torch.Tensor) -> None:
        self.committed.append(item.dest_index.fqn)


def _item(name: str, offsets: tuple, lengths: tuple, dest: tuple | None = None) -> _ReadItem:
    return _ReadItem(LoadItemType.TENSOR, _Index(name), torch.Size(dest or offsets),
                     _Index(name), torch.Size(offsets), torch.Size(lengths))


@pytest.fixture
def checkpoint(io_dir):
    path = os.path.join(str(io_dir), "ck")
    save_checkpoint(cases.full(), path, max_shard_size=1000)
    assert len(os.listdir(path)) > 2  # several shards and the index
    return path


def test_metadata_is_the_headers(checkpoint):
    md = UfileStorageReader(checkpoint).read_metadata()
    full = cases.full()
    assert sorted(md.state_dict_metadata) == sorted(full)
    for name, t in full.items():
        m = md.state_dict_metadata[name]
        assert (m.properties.dtype, tuple(m.size)) == (t.dtype, tuple(t.shape)), name
        assert [(tuple(c.offsets), tuple(c.sizes)) for c in m.chunks] == \
            [((0,) * t.dim(), tuple(t.shape))], name


def test_items_land_in_the_resolved_views(checkpoint):
    full = cases.full()
    state = {k: torch.zeros_like(v) for k, v in full.items()}
    items = []
    for name, t in full.items():
        dim = cases._dim(name, t.dim())
        if dim is None or t.shape[dim] < 2:
            items.append(_item(name, (0,) * t.dim(), tuple(t.shape)))
            continue
        cut = t.shape[dim] // 2  # two chunks along the split dimension (inner: strided views)
        for lo, n in ((0, cut), (cut, t.shape[dim] - cut)):
            offsets = tuple(lo if d == dim else 0 for d in range(t.dim()))
            lengths = tuple(n if d == dim else s for d, s in enumerate(t.shape))
            items.append(_item(name, offsets, lengths))
    # a widening cast: a float16 tensor into a float32 state dict entry
    half = next(k for k, v in full.items() if v.dtype == torch.float16)
    state[half] = torch.zeros(full[half].shape, dtype=torch.float32)
    reader = UfileStorageReader(checkpoint)
    reader.read_metadata()
    plan = reader.prepare_local_plan(LoadPlan(items))
    planner = _Planner(state)
    assert reader.read_data(plan, planner).wait() is None
    assert sorted(planner.committed) == sorted(i.dest_index.fqn for i in items)
    for name, t in full.items():
        want = t.to(torch.float32) if name == half else t
        assert torch.equal(state[name], want), name


def test_a_part_of_a_tensor_into_another_offset(checkpoint):
    """Rows 2..5 of the checkpoint tensor into rows 0..3 of a smaller one."""
    full = cases.full()["embed.weight"]
    state = {"embed.weight": torch.zeros(4, full.shape[1], dtype=full.dtype)}
    item = _item("embed.weight", (2, 0), (4, full.shape[1]), dest=(0, 0))
    reader = UfileStorageReader(checkpoint)
    reader.read_data(LoadPlan([item]), _Planner(state)).wait()
    assert torch.equal(state["embed.weight"], full[2:6])


def test_non_tensor_items_are_refused(checkpoint):
    item = dataclasses.replace(_item("step", (), ()), type=LoadItemType.BYTE_IO)
    with pytest.raises(ValueError, match="'step' is not a tensor"):
        UfileStorageReader(checkpoint).prepare_local_plan(LoadPlan([item]))


def test_a_failed_load_surfaces_at_wait(checkpoint):
    """A name the checkpoint lacks: load_into's error comes out of the future."""
    state = {"nope": torch.zeros(2)}
    fut = UfileStorageReader(checkpoint).read_data(LoadPlan([_item("nope", (0,), (2,))]),
                                                   _Planner(state))
    with pytest.raises(ValueError, match="nope"):
        fut.wait()
