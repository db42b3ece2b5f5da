# SPDX-License-Identifier: Apache-2.0
"""UfileStorageWriter driven by hand, as dcp.save drives it, for three ranks
in one process: each rank's write items (replicated tensors deduplicated, row
and column chunks of sharded ones, empty chunks), the coordinator's
prepare_global_plan, every rank's write_data, finish; the directory must be
byte for byte save_checkpoint's. torch 1.x has no torch.distributed.checkpoint:
there the few DCP types the writer uses are stood in by dataclasses with the
same fields (test_save_dcp_gpu.py runs the real dcp.save on torch 2.x)."""
from __future__ import annotations

import dataclasses
import os
import types

import torch

import dcp_stand_in
import save_dist_cases as cases
from ufile.safetensors import save_checkpoint

dcp_stand_in.install()
from ufile.safetensors._save_dcp import UfileStorageWriter  # noqa: E402
from torch.distributed.checkpoint.planner import SavePlan, WriteItemType  # noqa: E402


@dataclasses.dataclass(frozen=True)
class _Index:
    fqn: str
    offset: tuple


@dataclasses.dataclass
class _Item:
    index: _Index
    type: object
    tensor_data: object


def _item(fqn: str, full: torch.Tensor, offsets: tuple, sizes: tuple) -> _Item:
    td = types.SimpleNamespace(size=full.shape, properties=types.SimpleNamespace(
        dtype=full.dtype), chunk=types.SimpleNamespace(offsets=offsets, sizes=sizes))
    return _Item(_Index(fqn, offsets), WriteItemType.SHARD, td)


class _Planner:
    def __init__(self, chunks: dict):
        self.chunks = chunks

    def resolve_data(self, item):
        return self.chunks[item.index.fqn]


def _plans(n: int) -> list:
    """Each rank's items and chunk tensors: tensors split like DTensor's Shard
    (torch.chunk), replicated ones assigned round-robin (DCP's dedup)."""
    full = cases.full()
    out = [([], {}) for _ in range(n)]
    for i, (name, t) in enumerate(full.items()):
        dim = cases._dim(name, t.dim())
        if dim is None:
            items, chunks = out[i % n]
            items.append(_item(name, t, (0,) * t.dim(), tuple(t.shape)))
            chunks[name] = t
            continue
        parts = list(torch.chunk(t, n, dim))
        parts += [t.narrow(dim, 0, 0)] * (n - len(parts))  # DTensor's empty trailing shards
        start = 0
        for r, part in enumerate(parts):
            offsets = tuple(start if d == dim else 0 for d in range(t.dim()))
            start += part.shape[dim]
            out[r][0].append(_item(name, t, offsets, tuple(part.shape)))
            out[r][1][name] = part.contiguous()
    return out


def test_writer_gives_the_checkpoint(io_dir):
    n = 3
    root = str(io_dir)
    want = os.path.join(root, "expected")
    save_checkpoint(cases.full(), want, max_shard_size=cases.MAX_SHARD)
    path = os.path.join(root, "dcp")
    writers = [UfileStorageWriter(path, max_shard_size=cases.MAX_SHARD) for _ in range(n)]
    ranks = _plans(n)
    for r, w in enumerate(writers):
        w.reset()
        w.set_up_storage_writer(r == 0, rank=r, use_collectives=True)
    local = [w.prepare_local_plan(SavePlan(items)) for w, (items, _) in zip(writers, ranks)]
    glob = writers[0].prepare_global_plan(local)
    results = [w.write_data(p, _Planner(chunks)).wait()
               for w, p, (_, chunks) in zip(writers, glob, ranks)]
    writers[0].finish(None, results)
    assert sorted(os.listdir(path)) == sorted(os.listdir(want))
    for f in os.listdir(want):
        assert open(os.path.join(path, f), "rb").read() == \
            open(os.path.join(want, f), "rb").read(), f


def test_bytes_items_refused(io_dir):
    w = UfileStorageWriter(str(io_dir))
    item = _Item(_Index("opt.step", (0,)), WriteItemType.BYTE_IO, None)
    try:
        w.prepare_local_plan(SavePlan([item]))
    except ValueError as exc:
        assert "opt.step" in str(exc)
    else:
        raise AssertionError("a bytes item was accepted")
