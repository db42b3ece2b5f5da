# SPDX-License-Identifier: Apache-2.0
"""What each rank of a collective load needs, as declared by the caller.

``shard``: a mapping of regular expressions (``re.search`` in the tensor name;
the first matching pattern wins, in the mapping's order) to the dimension to
split, or a callable ``(name, shape) -> dimension or None``. A split tensor
reaches rank r as ``torch.tensor_split(tensor, ranks, dim)[r]``; a tensor no
rule matches is replicated; a pattern that decides no tensor of the checkpoint
(it matches none, or only tensors an earlier pattern took) is an error, as it
is most likely mistyped, except in the rules ``shard_from_tp_plan`` made (a
plan describes a model class: a checkpoint may lack biases or a tied lm_head).
``select``: a predicate on the name, evaluated by each rank for itself."""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Union

from ._format import Header, SafetensorError

ShardRule = Union[Mapping[str, int], Callable[[str, tuple], Union[int, None]], Any, None]
Select = Union[Callable[[str], bool], None]


class TpShard(dict):
    """The ``shard`` mapping ``shard_from_tp_plan`` returns: a dict whose
    patterns (``optional``) may match no tensor of a checkpoint. Patterns added
    to it later are checked as any other."""

    def __init__(self, rules: dict):
        super().__init__(rules)
        self.optional = frozenset(rules)


def split_dims(headers: list[Header], shard: ShardRule) -> dict:
    """Tensor name -> the dimension it is split along, or None. Raises
    SafetensorError naming the tensor, its file and the rule when a rule gives a
    dimension the tensor does not have, and naming the patterns of a mapping
    that decide no tensor (mistyped, or shadowed by an earlier pattern). A
    mesh rule (_dist_mesh.on_mesh) gives each tensor its MeshSplit or None."""
    if hasattr(shard, "split_dims"):
        return shard.split_dims(headers)
    used: set = set()
    rule = _as_callable(shard, used)
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
    if isinstance(shard, Mapping):
        _check_all_used(headers, shard, used)
    return out


def _check_all_used(headers: list[Header], shard: Mapping, used: set) -> None:
    optional = shard.optional if isinstance(shard, TpShard) else frozenset()
    unused = [p for p in shard if p not in used and p not in optional]
    if not unused:
        return
    names = [n for h in headers for n in h.tensors]
    why = []
    for p in unused:
        hit = next((n for n in names if re.search(p, n)), None)
        why.append(f"pattern {_text(p)!r} matches no tensor" if hit is None else
                   f"pattern {_text(p)!r} matches only tensors an earlier pattern takes "
                   f"(such as {hit!r})")
    files = f"{len(headers)} file" + ("s" if len(headers) != 1 else "")
    seen = f"{len(names)} tensors in {files}" + (f", such as {names[0]!r}" if names else "")
    raise SafetensorError(f"shard: {'; '.join(why)} of the checkpoint ({seen}): a mistyped "
                          f"pattern would leave its tensors whole on every rank; fix or "
                          f"remove it")


def _text(pattern: object) -> str:
    return pattern.pattern if isinstance(pattern, re.Pattern) else str(pattern)


def _as_callable(shard: ShardRule,
                 used: set | None = None) -> Callable[[str, tuple], int | None]:
    """The rule as a function of (name, shape); ``used``, when given, collects
    the patterns of a mapping that decide a tensor."""
    if shard is None:
        return lambda name, shape: None
    if callable(shard):
        return shard
    if not isinstance(shard, Mapping):
        raise TypeError(f"shard must be a mapping of patterns to dimensions or a callable, "
                        f"not {type(shard).__name__}")
    try:
        rules = [(p, re.compile(p), d) for p, d in shard.items()]
    except re.error as exc:
        raise ValueError(f"shard: invalid pattern {exc.pattern!r}: {exc}") from None

    def first_match(name: str, shape: tuple) -> int | None:
        for key, pattern, dim in rules:
            if pattern.search(name):
                if used is not None:
                    used.add(key)
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


def shard_from_tp_plan(tp_plan: Mapping[str, str], prefix: str = "") -> TpShard:
    """A ``shard`` mapping from a transformers ``tp_plan`` ({module pattern with
    ``*`` for layer indices: style}): "colwise" styles split weights and biases
    along dimension 0, "rowwise" weights along 1 (their biases stay whole),
    "embedding_rowwise" (vocabulary-parallel embeddings) along 0; styles that
    keep tensors whole ("replicate", "gather", ...) add no rule; an unknown or
    packed style raises ValueError. ``prefix`` is prepended to module names
    (e.g. "model." when the plan is the base model's). Its patterns may match
    no tensor of a checkpoint (``TpShard``)."""
    out: dict = {}
    for module, style in tp_plan.items():
        try:
            dims = _tp_dims(style)
        except ValueError as exc:
            raise ValueError(f"{exc} (module {module!r})") from None
        stem = re.escape(prefix + module).replace(r"\*", r"\d+")
        for param, dim in (dims or {}).items():
            out[rf"(^|\.){stem}\.{param}$"] = dim
    return TpShard(out)
