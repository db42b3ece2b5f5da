# SPDX-License-Identifier: Apache-2.0
"""Outputs laid out on a device mesh, as plain data (torch 1.13 has no
DeviceMesh): the mesh as nested lists of global ranks (``[[0, 1], [2, 3]]``, a
2 x 2 mesh), and per tensor one placement a mesh dimension: an int ``d``
(DTensor's ``Shard(d)``) or None (``Replicate()``).

The local part of rank r cuts the tensor mesh dimension by mesh dimension, in
order, at r's coordinate: what ``distribute_tensor`` gives that rank. Uneven
parts follow ``torch.chunk`` (DTensor's convention: [3, 3, 3, 1] for 10 over
4) or, with ``split="tensor_split"``, ``torch.tensor_split`` ([3, 3, 2, 2]).
Ranks that share a part (the replicas of a 2-D mesh) share its reads: each
byte is still read once across the group (_dist_plan)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

from . import _dist_box, _dist_rules
from ._format import Header, SafetensorError

Placements = Union[Mapping[str, tuple], Callable[[str, tuple], Union[tuple, None]]]


@dataclass(frozen=True)
class Layout:
    """A mesh over a group: its shape, each group rank's coordinate, the
    split convention, and a short digest of them (what ``repr`` shows)."""
    shape: tuple
    coords: tuple
    convention: str
    digest: str

    def __repr__(self) -> str:
        return f"Layout({list(self.shape)}, {self.convention}, {self.digest})"


@dataclass(frozen=True)
class MeshSplit:
    """One tensor's placements on a mesh: a ``shard`` rule value (_dist_plan.box_for)."""
    layout: Layout
    placements: tuple

    def box(self, shape: tuple, rank: int, ranks: int) -> tuple:
        if ranks != len(self.layout.coords):
            raise SafetensorError(f"the mesh has {len(self.layout.coords)} ranks, the group "
                                  f"{ranks}")
        box = _dist_box.whole(shape)
        for m, dim in enumerate(self.placements):
            if dim is not None:
                box = _dist_box.cut(box, dim, self.layout.coords[rank][m],
                                    self.layout.shape[m], self.layout.convention)
        return box


def layout(mesh: Any, ranks: list, convention: str = "chunk") -> Layout:
    """The Layout of ``mesh`` (nested lists of global ranks) over a group whose
    ranks are ``ranks`` (global, in group order). Raises ValueError for a mesh
    that is not rectangular, repeats a rank, or does not hold exactly the
    group's ranks."""
    if convention not in _dist_box.CONVENTIONS:
        raise ValueError(f"split must be one of {_dist_box.CONVENTIONS}, not {convention!r}")
    shape, where = _walk(mesh)
    missing = [r for r in ranks if r not in where]
    extra = sorted(set(where) - set(ranks))
    if missing or extra:
        raise ValueError(f"mesh {mesh!r} must hold each rank of the group once (global ranks "
                         f"{list(ranks)}): missing {missing}, not in the group {extra}")
    coords = tuple(where[r] for r in ranks)
    digest = hashlib.sha256(repr((shape, coords, convention)).encode()).hexdigest()[:16]
    return Layout(shape, coords, convention, digest)


def _walk(mesh: Any) -> tuple:
    """(shape, {rank: coordinate}) of a rectangular nest of lists of ints."""
    where: dict = {}

    def visit(node: Any, at: tuple) -> tuple:
        if isinstance(node, int) and not isinstance(node, bool):
            if node in where:
                raise ValueError(f"mesh: rank {node} appears twice")
            where[node] = at
            return ()
        if not isinstance(node, (list, tuple)) or not node:
            raise ValueError(f"mesh: {node!r} is neither a rank nor a non-empty list")
        shapes = {visit(child, at + (i,)) for i, child in enumerate(node)}
        if len(shapes) != 1:
            raise ValueError(f"mesh: not rectangular ({node!r})")
        return (len(node),) + shapes.pop()
    shape = visit(mesh, ())
    if not shape:
        raise ValueError(f"mesh: {mesh!r} is a rank, not a list of ranks")
    return shape, where


class MeshShard:
    """A ``shard`` rule laying tensors out on a mesh; ``on_mesh`` makes it."""

    def __init__(self, mesh: Any, placements: Placements, group: Any, convention: str,
                 ranks: list | None = None):
        self.mesh, self.placements, self.group = mesh, placements, group
        self.convention, self.ranks = convention, ranks
        self.shapes: dict = {}    # after split_dims: name -> shape
        self.splits: dict = {}    # after split_dims: name -> MeshSplit or None

    def _group_ranks(self) -> list:
        if self.ranks is not None:
            return list(self.ranks)
        import torch.distributed as dist
        group = self.group
        size = dist.get_world_size(group)
        if group is None or group == dist.group.WORLD:
            return list(range(size))
        return [dist.get_global_rank(group, r) for r in range(size)]

    def split_dims(self, headers: list[Header]) -> dict:
        """Tensor name -> MeshSplit, or None where every placement replicates.
        Raises SafetensorError naming the tensor for a placement it cannot
        have, ValueError for a bad mesh or placement rules."""
        lay = layout(self.mesh, self._group_ranks(), self.convention)
        used: set = set()
        rule = _dist_rules._as_callable(self.placements, used)   # type: ignore[arg-type]
        out: dict = {}
        for h in headers:
            for name, info in h.tensors.items():
                got = _placements(rule(name, info.shape), len(lay.shape), name, info.shape,
                                  h.path)
                out[name] = None if all(p is None for p in got) else MeshSplit(lay, got)
        if isinstance(self.placements, Mapping):
            _dist_rules._check_all_used(headers, self.placements, used)
        self.shapes = {n: i.shape for h in headers for n, i in h.tensors.items()}
        self.splits = out
        return out


def _placements(value: Any, ndim: int, name: str, shape: tuple, path: str) -> tuple:
    if value is None:
        return (None,) * ndim
    if not isinstance(value, (tuple, list)) or len(value) != ndim:
        raise SafetensorError(f"placements for tensor {name!r} ({path}): {value!r} is not "
                              f"one placement (a dimension or None) for each of the mesh's "
                              f"{ndim} dimensions")
    out = []
    for p in value:
        if p is not None and (isinstance(p, bool) or not isinstance(p, int)
                              or not -len(shape) <= p < len(shape)):
            raise SafetensorError(f"placements for tensor {name!r} ({path}) of shape "
                                  f"{list(shape)}: {p!r} is not one of its dimensions or "
                                  f"None")
        out.append(None if p is None else p % len(shape))
    return tuple(out)


def on_mesh(mesh: Any, placements: Placements, *, group: Any = None,
            split: str = "chunk") -> MeshShard:
    """A ``shard`` rule putting each tensor on ``mesh`` (nested lists of the
    global ranks of ``group``, default the world's) as ``placements`` says: a
    mapping of regular expressions (``re.search``, first match wins) to one
    placement a mesh dimension (a tensor dimension: Shard; None: Replicate),
    or a callable ``(name, shape) -> placements or None``; a tensor no pattern
    matches is replicated, a pattern that decides no tensor is an error.
    ``split``: "chunk" (DTensor's uneven parts, default) or "tensor_split".
    Checked on every rank inside the collective load: a bad mesh or placement
    makes every rank raise."""
    return MeshShard(mesh, placements, group, split)
