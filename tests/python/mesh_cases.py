# SPDX-License-Identifier: Apache-2.0
"""What a rank of a device mesh holds of a tensor, computed the way DTensor's
``distribute_tensor`` cuts it (torch.chunk along each sharded dimension, mesh
dimension by mesh dimension, missing chunks empty), independently of the
planner; and the worker of the mesh tests."""
from __future__ import annotations

import dist_cases as dc


def chunks(t, n: int, dim: int) -> list:
    """torch.chunk's parts, padded with empty ones to ``n`` (DTensor's Shard)."""
    import torch
    parts = list(torch.chunk(t, n, dim)) if t.shape[dim] else []
    while len(parts) < n:
        shape = list(t.shape)
        shape[dim] = 0
        parts.append(t.new_empty(shape))
    return parts


def tensor_splits(t, n: int, dim: int) -> list:
    import torch
    return list(torch.tensor_split(t, n, dim))


def local_part(t, mesh_shape: tuple, coord: tuple, placements: tuple, split: str = "chunk"):
    cut = chunks if split == "chunk" else tensor_splits
    for m, dim in enumerate(placements):
        if dim is not None:
            t = cut(t, mesh_shape[m], dim % t.dim())[coord[m]]
    return t


def coordinate(mesh: list, rank: int) -> tuple:
    import numpy as np
    where = np.argwhere(np.array(mesh) == rank)
    return tuple(int(x) for x in where[0])


def mesh_worker(rank: int, n: int, path: str, mesh: list, placements: dict, split: str,
                fault: str | None):
    """Loads on ``mesh``; returns {name: bytes}, {name: shape} and the bytes read."""
    import torch
    import torch.distributed as dist
    from ufile import safetensors as us
    if fault == "mesh_missing_rank" and rank == 2:
        mesh = [[0, 1], [3, 3]]
    shard = us.on_mesh(mesh, placements, split=split)
    with dc.recorded_reads() as reads:
        out = us.load_checkpoint(path, group=dist.group.WORLD, shard=shard,
                                 max_device_bytes=64 << 10)
    return ({k: t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
             for k, t in out.items()}, {k: tuple(t.shape) for k, t in out.items()},
            sum(p.size for p in reads))


def mesh_worker_on_slow_network(rank: int, n: int, path: str, mesh: list, placements: dict,
                                split: str):
    """mesh_worker's result, and the buffers it used twice while in flight."""
    import inflight_spy
    with inflight_spy.watch_buffers() as clashes:
        got = mesh_worker(rank, n, path, mesh, placements, split, None)
    return got, clashes
