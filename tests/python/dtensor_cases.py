# SPDX-License-Identifier: Apache-2.0
"""Rank workers of the DTensor tests (torch >= 2.x, NCCL): outputs as DTensors
and DTensor targets, compared with the parts ``distribute_tensor`` cuts
(torch.chunk's convention, cut here without collectives) of the whole tensor
as the safetensors package loads it."""
from __future__ import annotations

import os

PLACEMENTS_1D = {r"\.q\.weight$": ("S", 0), r"\.o\.weight$": ("S", 1), r"^embed": ("S", 0),
                 r"^big$": ("S", -1), r"^cube$": ("S", 2)}


def _placement(mod, spec):
    return mod.Replicate() if spec is None else mod.Shard(spec[1])


def _reference(path: str) -> dict:
    """On this process's GPU: the package reads "cuda" as device 0, which
    would put every rank's tensors there (NCCL then refuses two ranks on one
    device)."""
    import torch
    from safetensors.torch import load_file
    device = f"cuda:{torch.cuda.current_device()}"
    out = {}
    for f in sorted(os.listdir(path)):
        if f.endswith(".safetensors"):
            out.update(load_file(os.path.join(path, f), device=device))
    return out


def _same_bytes(a, b) -> bool:
    """Equal shapes and bytes (random float bytes hold NaNs, which
    ``torch.equal`` calls unequal to themselves)."""
    import torch
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                       b.contiguous().reshape(-1).view(torch.uint8))


def _plan(name: str, rules: dict, ndim: int, mesh_ndim: int, split_on: int):
    import re
    spec = next((s for p, s in rules.items() if re.search(p, name)), None)
    out = [None] * mesh_ndim
    if spec is not None:
        out[split_on] = (spec[0], spec[1] % ndim)
    return out


def dtensor_worker(rank: int, n: int, path: str, mesh_shape: tuple, split_on: int, mode: str,
                   gather: bool = True):
    """Loads as DTensors (mode "out") or into DTensors (mode "into") on a mesh
    of ``mesh_shape`` sharding along mesh dimension ``split_on``; returns the
    names whose placements, local parts or full tensors differ from what
    ``distribute_tensor`` gives. The expected parts are cut here with
    torch.chunk's convention (mesh_cases), not with distribute_tensor, whose
    collectives NCCL refuses for some dtypes (int16); with ``gather`` the full
    tensors are gathered (``full_tensor``) for the dtypes NCCL moves."""
    import math
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    import torch.distributed.tensor as mod
    import mesh_cases as mc
    from ufile import safetensors as us
    movable = {torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
               torch.uint8, torch.int32, torch.int64}
    mesh = init_device_mesh("cuda", mesh_shape)
    coord = tuple(mesh.get_coordinate())
    ref = _reference(path)
    placements = {}
    for name, t in ref.items():
        specs = _plan(name, PLACEMENTS_1D, max(1, t.dim()), len(mesh_shape), split_on)
        if t.dim() == 0:
            specs = [None] * len(mesh_shape)
        placements[name] = [_placement(mod, s) for s in specs]

    def local_of(full, pl):
        dims = tuple(None if isinstance(p, mod.Replicate) else p.dim for p in pl)
        return mc.local_part(full, tuple(mesh_shape), coord, dims, "chunk").contiguous()

    def zeros_on_mesh(full, pl):
        stride = tuple(math.prod(full.shape[i + 1:]) for i in range(full.dim()))
        return mod.DTensor.from_local(torch.zeros_like(local_of(full, pl)), mesh, pl,
                                      run_check=False, shape=full.shape, stride=stride)
    if mode == "out":
        got = us.load_dtensors(path, mesh, lambda name, shape: placements[name])
    else:
        got = {k: zeros_on_mesh(v, placements[k]) for k, v in ref.items()}
        us.load_into(path, got, group=dist.group.WORLD)
    bad = []
    for name, full in ref.items():
        pl, d = placements[name], got[name]
        if not isinstance(d, mod.DTensor) or list(d.placements) != list(pl):
            bad.append(f"{name}: not a DTensor placed {pl}")
            continue
        # a collective: on every rank, for every name of a dtype NCCL moves
        whole = d.full_tensor() if gather and full.dtype in movable else None
        a, b = d.to_local(), local_of(full, pl)
        if not _same_bytes(a, b):
            bad.append(f"{name}: local {tuple(a.shape)} differs from {tuple(b.shape)}")
        elif whole is not None and not _same_bytes(whole, full):
            bad.append(f"{name}: full tensor differs")
    return bad
