# SPDX-License-Identifier: Apache-2.0
"""The targets of load_into, checked and turned into destinations: for each
checkpoint tensor a target takes, the box of it (_dist_box) and the view of the
target it lands in.

A target (``targets[rename(name)]``) is a tensor (the whole checkpoint tensor,
same shape), a DTensor (its local part, placed as its mesh and placements
say, _dist_dtensor), or a list of ``(destination, destination slices, source
slices)``: ``destination[destination slices]`` receives ``source[source
slices]`` (slices: None for all, a slice, or a tuple of slices with step 1),
for fused (q, k, v into one qkv) and padded (a vocabulary of 32000 rows into
32064) parameters and for parts of a tensor laid out by hand."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from . import _dist_box
from ._format import DTYPES, Header


@dataclass
class Dest:
    """Part ``key`` of this rank: box ``box`` of checkpoint tensor ``name``,
    landing in ``view``; ``in_place``: read straight into the view (contiguous,
    the checkpoint's dtype), else through a temporary."""
    key: str
    name: str
    box: tuple
    view: Any
    in_place: bool


def _is_dtensor(t: Any) -> bool:
    return hasattr(t, "to_local") and hasattr(t, "placements") and hasattr(t, "device_mesh")


def tensors_of(targets: Mapping[str, Any]) -> Iterator[Any]:
    """Every destination tensor (a DTensor's local one) of ``targets``."""
    if not isinstance(targets, Mapping):
        raise TypeError(f"load_into: targets must map checkpoint names to tensors, not "
                        f"{type(targets).__name__}")
    for key, target in targets.items():
        for dest, _, _ in _entries(key, target):
            yield dest.to_local() if _is_dtensor(dest) else dest


def _entries(key: str, target: Any) -> list:
    if isinstance(target, list):
        for e in target:
            if not (isinstance(e, tuple) and len(e) == 3 and hasattr(e[0], "shape")):
                raise TypeError(f"load_into: target {key!r}: each entry must be "
                                f"(destination tensor, destination slices, source slices), "
                                f"not {e!r:.80}")
        return target
    if not hasattr(target, "shape") or not hasattr(target, "dtype"):
        raise TypeError(f"load_into: target {key!r} is a {type(target).__name__}, not a "
                        f"tensor, a DTensor or a list of (destination, slices, slices)")
    return [(target, None, None)]


def _renamer(rename: Any) -> Callable[[str], Any]:
    if rename is None:
        return lambda n: n
    if isinstance(rename, Mapping):
        return lambda n: rename.get(n, n)
    if callable(rename):
        return rename
    raise TypeError(f"load_into: rename must be a mapping or a callable, not "
                    f"{type(rename).__name__}")


def resolve_targets(headers: list[Header], targets: Mapping[str, Any], rename: Any,
                    cast: bool, strict: bool) -> dict:
    """{part key: Dest} in checkpoint order (a tensor's first part keyed by its
    name, the next by name#1, ...). Raises ValueError naming the tensor and the
    target for a shape or dtype that does not fit, and, when ``strict``, for
    targets no checkpoint tensor fills."""
    import torch
    new_name = _renamer(rename)
    out: dict = {}
    taken: set = set()
    for h in headers:
        for info in (h.tensors[n] for n in h.offset_order()):
            key = new_name(info.name)
            if key is None or key not in targets:
                continue
            taken.add(key)
            for dest, dslices, sslices in _entries(key, targets[key]):
                what = f"load_into: checkpoint tensor {info.name!r} into target {key!r}"
                if _is_dtensor(dest):
                    from ._dist_dtensor import local_box
                    view, box = local_box(dest, info.shape, what)
                else:
                    view = dest[_slices(dslices, dest.dim(), what, "destination")]
                    box = _box(sslices, info.shape, what)
                if tuple(view.shape) != _dist_box.extents(box):
                    raise ValueError(f"{what}: the destination is {list(view.shape)} and the "
                                     f"source part {list(_dist_box.extents(box))}")
                src = getattr(torch, DTYPES[info.dtype][1], None)
                if view.dtype != src and not cast:
                    raise ValueError(f"{what}: the checkpoint holds {info.dtype}, the "
                                     f"destination is {view.dtype}; pass cast=True to convert")
                part = info.name
                n = 1
                while part in out:
                    part, n = f"{info.name}#{n}", n + 1
                in_place = view.dtype == src and view.is_contiguous()
                out[part] = Dest(part, info.name, box, view, in_place)
    missing = [k for k in targets if k not in taken]
    if strict and missing:
        raise ValueError(f"load_into: {len(missing)} targets have no tensor in the checkpoint "
                         f"(after rename), such as {missing[:3]}; strict=False skips them")
    return out


def _slices(spec: Any, ndim: int, what: str, side: str) -> tuple:
    if spec is None:
        return ()
    spec = spec if isinstance(spec, tuple) else (spec,)
    if len(spec) > ndim or not all(isinstance(s, slice) and s.step in (None, 1)
                                   for s in spec):
        raise ValueError(f"{what}: {side} slices {spec!r} are not at most {ndim} "
                         f"slices with step 1")
    return spec


def _box(spec: Any, shape: tuple, what: str) -> tuple:
    """The box ``source[spec]`` of a tensor of ``shape``."""
    spec = _slices(spec, len(shape), what, "source")
    box = []
    for d, size in enumerate(shape):
        lo, hi, _ = (spec[d] if d < len(spec) else slice(None)).indices(size)
        box.append((lo, max(lo, hi)))
    return tuple(box)
