# SPDX-License-Identifier: Apache-2.0
"""What each rank of a collective load needs, as declared by the caller.

``shard``: a mapping of regular expressions (``re.search`` in the tensor name;
the first matching pattern wins, in the mapping's order) to the dimension to
split, or a callable ``(name, shape) -> dimension or None``. A split tensor
reaches rank r as ``torch.tensor_split(tensor, ranks, dim)[r]``; a tensor no
rule matches is replicated. ``select``: a predicate on the name, evaluated by
each rank for itself."""
from __future__ import annotations

import re
from typing import Callable, Mapping, Union

from ._format import Header, SafetensorError

ShardRule = Union[Mapping[str, int], Callable[[str, tuple], Union[int, None]], None]
Select = Union[Callable[[str], bool], None]


def split_dims(headers: list[Header], shard: ShardRule) -> dict:
    """Tensor name -> the dimension it is split along, or None. Raises
    SafetensorError naming the tensor, its file and the rule when a rule gives a
    dimension the tensor does not have."""
    rule = _as_callable(shard)
    out: dict = {}
    for h in headers:
        for name, info in h.tensors.items():
            dim = rule(name, info.shape)
            if dim is None:
                out[name] = None
                continue
            if isinstance(dim, bool) or not isinstance(dim, int):
                raise SafetensorError(f"shard rule for tensor {name!r} ({h.path}) returned "
                                      f"{dim!r}, not a dimension or None")
            nd = len(info.shape)
            if not -nd <= dim < nd:
                raise SafetensorError(f"shard rule splits tensor {name!r} ({h.path}) of shape "
                                      f"{list(info.shape)} along dimension {dim}, which it "
                                      f"does not have")
            out[name] = dim % nd
    return out


def _as_callable(shard: ShardRule) -> Callable[[str, tuple], int | None]:
    if shard is None:
        return lambda name, shape: None
    if callable(shard):
        return shard
    if not isinstance(shard, Mapping):
        raise TypeError(f"shard must be a mapping of patterns to dimensions or a callable, "
                        f"not {type(shard).__name__}")
    try:
        rules = [(re.compile(p), d) for p, d in shard.items()]
    except re.error as exc:
        raise ValueError(f"shard: invalid pattern {exc.pattern!r}: {exc}") from None

    def first_match(name: str, shape: tuple) -> int | None:
        for pattern, dim in rules:
            if pattern.search(name):
                return dim
        return None
    return first_match


def selected(headers: list[Header], select: Select) -> set:
    """The names this rank needs."""
    names = {n for h in headers for n in h.tensors}
    if select is None:
        return names
    if not callable(select):
        raise TypeError(f"select must be a predicate on the tensor name, not "
                        f"{type(select).__name__}")
    return {n for n in names if select(n)}


# transformers' tensor-parallel styles whose tensors stay whole on every rank.
_TP_WHOLE = ("replicate", "gather", "sequence_parallel", "isolate", "ep_router", "local",
             "grouped_gemm")


def _tp_dims(style: str) -> dict | None:
    """The dimension each parameter of an nn.Linear / nn.Embedding (weights
    out_features x in_features, num_embeddings x dim) splits along under a
    transformers tensor-parallel style; None when it keeps tensors whole."""
    if "packed" in style:
        raise ValueError(f"tp_plan style {style!r}: packed weights are split per packed "
                         f"part, which one dimension cannot express")
    if "rowwise" in style and not style.startswith("embedding"):
        return {"weight": 1}                # bias: whole
    if "colwise" in style or style.startswith("embedding"):
        return {"weight": 0, "bias": 0}
    if style in _TP_WHOLE:
        return None
    raise ValueError(f"tp_plan: unknown style {style!r}")


def shard_from_tp_plan(tp_plan: Mapping[str, str], prefix: str = "") -> dict:
    """A ``shard`` mapping from a transformers ``tp_plan`` ({module pattern with
    ``*`` for layer indices: style}): "colwise" styles split weights and biases
    along dimension 0, "rowwise" weights along 1 (their biases stay whole),
    "embedding_rowwise" (vocabulary-parallel embeddings) along 0; styles that
    keep tensors whole ("replicate", "gather", ...) add no rule; an unknown or
    packed style raises ValueError. ``prefix`` is prepended to module names
    (e.g. "model." when the plan is the base model's)."""
    out: dict = {}
    for module, style in tp_plan.items():
        try:
            dims = _tp_dims(style)
        except ValueError as exc:
            raise ValueError(f"{exc} (module {module!r})") from None
        stem = re.escape(prefix + module).replace(r"\*", r"\d+")
        for param, dim in (dims or {}).items():
            out[rf"(^|\.){stem}\.{param}$"] = dim
    return out
