# SPDX-License-Identifier: Apache-2.0
"""Rank workers of the UfileStorageReader tests (torch 2.x: DCP, DTensor)."""
from __future__ import annotations

import save_dist_cases


def worker(rank: int, n: int, path: str, kind: str, device: str) -> str:
    """dcp.load of the checkpoint at ``path`` through UfileStorageReader into a
    state dict of zeros: replicated tensors ("plain") or DTensors over a 1-D
    mesh of the group (Shard(0), Shard(1), Shard(-1), Replicate by tensor,
    uneven parts in DTensor's own convention); every value compared with the
    full tensors. Where torch has HuggingFaceStorageReader, it loads the same
    state dict and must give the same bytes."""
    import torch
    import torch.distributed.checkpoint as dcp
    from ufile.safetensors import UfileStorageReader
    full = save_dist_cases.full()
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"

    def fresh() -> dict:
        sd = {k: torch.zeros_like(v, device=device) for k, v in full.items()}
        if kind == "dtensor":
            from torch.distributed.device_mesh import init_device_mesh
            from torch.distributed.tensor import Replicate, Shard, distribute_tensor
            mesh = init_device_mesh(device.split(":")[0], (n,))
            for name, t in sd.items():
                d = save_dist_cases._dim(name, t.dim())
                sd[name] = distribute_tensor(t, mesh, [Replicate()] if d is None else [Shard(d)])
        return sd

    def wrong(sd: dict) -> list:
        out = []
        for k, v in sd.items():
            got = v.full_tensor() if hasattr(v, "full_tensor") else v
            if not torch.equal(got.cpu(), full[k]):
                out.append(k)
        return out
    got = fresh()
    dcp.load(got, storage_reader=UfileStorageReader(path))
    bad = wrong(got)
    if bad:
        return f"differing: {bad}"
    try:
        from torch.distributed.checkpoint import HuggingFaceStorageReader
    except ImportError:
        return "loaded"
    theirs = fresh()
    dcp.load(theirs, storage_reader=HuggingFaceStorageReader(path))
    return f"torch's reader differs: {wrong(theirs)}" if wrong(theirs) else "loaded, as torch's"


def failing_worker(rank: int, n: int, path: str) -> str:
    """Rank 1 asks for a tensor of the wrong shape: dcp.load raises on every rank."""
    import torch
    import torch.distributed.checkpoint as dcp
    from ufile.safetensors import UfileStorageReader
    sd = {k: torch.zeros_like(v) for k, v in save_dist_cases.full().items()}
    if rank == 1:
        sd["embed.weight"] = torch.zeros(3, 3)
    dcp.load(sd, storage_reader=UfileStorageReader(path))
    return "loaded"
