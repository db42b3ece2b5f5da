# SPDX-License-Identifier: Apache-2.0
"""Rank workers of the UfileStorageWriter tests (torch 2.x: DCP, DTensor)."""
from __future__ import annotations

import os

import save_dist_cases


def worker(rank: int, n: int, root: str, kind: str) -> str:
    """dcp.save of the model, replicated ("plain") or as DTensors sharded over
    a 1-D CPU mesh (Shard(0), Shard(1), Replicate by tensor), into
    root/kind; then dcp.load through torch's HuggingFaceStorageReader where
    torch has it, compared with the full tensors."""
    import torch
    import torch.distributed.checkpoint as dcp
    from ufile.safetensors._save_dcp import UfileStorageWriter
    full = save_dist_cases.full()
    sd = dict(full)
    if kind == "dtensor":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor
        mesh = init_device_mesh("cpu", (n,))
        for name, t in full.items():
            d = save_dist_cases._dim(name, t.dim())
            place = [Replicate()] if d is None else [Shard(d)]
            sd[name] = distribute_tensor(t, mesh, place)
    path = os.path.join(root, kind)
    dcp.save(sd, storage_writer=UfileStorageWriter(path, max_shard_size=save_dist_cases.MAX_SHARD))
    try:
        from torch.distributed.checkpoint import HuggingFaceStorageReader
    except ImportError:
        return "saved"
    back = {k: torch.zeros_like(v) for k, v in full.items()}
    dcp.load(back, storage_reader=HuggingFaceStorageReader(path))
    bad = [k for k in full if not torch.equal(back[k], full[k])]
    return f"loaded, differing: {bad}" if bad else "loaded"
