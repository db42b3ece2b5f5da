# SPDX-License-Identifier: Apache-2.0
"""Rank workers of the DTensor tests (torch >= 2.x, NCCL): outputs as DTensors
and DTensor targets, compared with ``distribute_tensor`` of the whole tensor
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


def _plan(name: str, rules: dict, ndim: int, mesh_ndim: int, split_on: int):
    import re
    spec = next((s for p, s in rules.items() if re.search(p, name)), None)
    out = [None] * mesh_ndim
    if spec is not None:
        out[split_on] = (spec[0], spec[1] % ndim)
    return out


def dtensor_worker(rank: int, n: int, path: str, mesh_shape: tuple, split_on: int, mode: str):
    """Loads as DTensors (mode "out") or into DTensors (mode "into") on a mesh
    of ``mesh_shape`` sharding along mesh dimension ``split_on``; returns the
    names whose local parts or full tensors differ from distribute_tensor's."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    import torch.distributed.tensor as mod
    from ufile import safetensors as us
    mesh = init_device_mesh("cuda", mesh_shape)
    ref = _reference(path)
    rules = {p: s for p, s in PLACEMENTS_1D.items()}
    placements = {}
    for name, t in ref.items():
        specs = _plan(name, rules, max(1, t.dim()), len(mesh_shape), split_on)
        if t.dim() == 0:
            specs = [None] * len(mesh_shape)
        placements[name] = [_placement(mod, s) for s in specs]
    if mode == "out":
        got = us.load_dtensors(path, mesh, lambda name, shape: placements[name])
    else:
        got = {k: mod.distribute_tensor(torch.zeros_like(v), mesh, placements[k])
               for k, v in ref.items()}
        us.load_into(path, got, group=dist.group.WORLD)
    bad = []
    for name, full in ref.items():
        want = mod.distribute_tensor(full, mesh, placements[name])
        d = got[name]
        if not isinstance(d, mod.DTensor) or list(d.placements) != list(want.placements):
            bad.append(f"{name}: not a DTensor placed {want.placements}")
            continue
        whole = d.full_tensor()   # a collective: on every rank, for every name
        a, b = d.to_local(), want.to_local()
        if a.shape != b.shape or not torch.equal(a, b):
            bad.append(f"{name}: local {tuple(a.shape)} differs from {tuple(b.shape)}")
        elif not torch.equal(whole, full):
            bad.append(f"{name}: full tensor differs")
    return bad
