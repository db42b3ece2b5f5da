# SPDX-License-Identifier: Apache-2.0
"""DTensor and DeviceMesh (torch >= 2.x) over the plain-data mesh layout of
_dist_mesh: a DeviceMesh becomes nested lists of global ranks, ``Shard(d)`` /
``Replicate()`` become ``d`` / None, and the local parts come back wrapped with
``DTensor.from_local`` (given the global shape and stride, so uneven parts
need no check). Uneven parts follow DTensor's own convention (torch.chunk's)."""
from __future__ import annotations

import math
from typing import Any, Mapping

from . import _dist_box
from ._dist_mesh import on_mesh


def _dtensor_module() -> Any:
    try:
        import torch.distributed.tensor as mod   # torch >= 2.4
        mod.DTensor
    except (ImportError, AttributeError):
        try:
            import torch.distributed._tensor as mod   # torch 2.0 - 2.3
        except ImportError as exc:
            import torch
            raise RuntimeError(f"DTensor needs torch >= 2.0; this is {torch.__version__}"
                               ) from exc
    return mod


def plain_placement(p: Any) -> int | None:
    """Shard(d) -> d, Replicate() -> None; others (Partial) raise ValueError."""
    name = type(p).__name__
    if name == "Replicate":
        return None
    if name == "Shard" and isinstance(getattr(p, "dim", None), int):
        return p.dim
    raise ValueError(f"placement {p!r}: a checkpoint is loaded as Shard(dim) or Replicate() "
                     f"parts")


def plain_mesh(device_mesh: Any) -> list:
    """The DeviceMesh as nested lists of global ranks."""
    return device_mesh.mesh.tolist()


def local_box(dt: Any, shape: tuple, what: str) -> tuple:
    """(the DTensor's local tensor, its box of a tensor of ``shape``)."""
    if tuple(dt.shape) != tuple(shape):
        raise ValueError(f"{what}: the DTensor is {list(dt.shape)}, the checkpoint tensor "
                         f"{list(shape)}")
    coord = dt.device_mesh.get_coordinate()
    if coord is None:
        raise ValueError(f"{what}: this rank is not in the DTensor's mesh")
    box = _dist_box.whole(tuple(shape))
    for m, p in enumerate(dt.placements):
        dim = plain_placement(p)
        if dim is not None:
            box = _dist_box.cut(box, dim % len(shape), coord[m], dt.device_mesh.size(m),
                                "chunk")
    return dt.to_local(), box


def _plain_placements(placements: Any) -> Any:
    if isinstance(placements, Mapping):
        return {k: tuple(plain_placement(p) for p in v) for k, v in placements.items()}
    if callable(placements):
        def rule(name: str, shape: tuple) -> Any:
            got = placements(name, shape)
            return None if got is None else tuple(plain_placement(p) for p in got)
        return rule
    raise TypeError(f"placements must be a mapping of patterns to placements or a callable, "
                    f"not {type(placements).__name__}")


def load_dtensors(path: Any, device_mesh: Any, placements: Any, group: Any,
                  options: dict) -> dict:
    import torch
    import torch.distributed as dist
    from . import load_checkpoint
    mod = _dtensor_module()
    group = dist.group.WORLD if group is None else group
    shard = on_mesh(plain_mesh(device_mesh), _plain_placements(placements), group=group)
    device = "cpu" if device_mesh.device_type == "cpu" else device_mesh.device_type
    local = load_checkpoint(path, device=device, group=group, shard=shard, **options)
    out = {}
    for name, t in local.items():
        shape = shard.shapes[name]
        split = shard.splits[name]
        dims = split.placements if split is not None else (None,) * device_mesh.ndim
        pl = [mod.Replicate() if d is None else mod.Shard(d) for d in dims]
        stride = tuple(math.prod(shape[i + 1:]) for i in range(len(shape)))
        out[name] = mod.DTensor.from_local(t, device_mesh, pl, run_check=False,
                                           shape=torch.Size(shape), stride=stride)
    return out
