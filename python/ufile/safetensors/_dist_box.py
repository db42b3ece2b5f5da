# SPDX-License-Identifier: Apache-2.0
"""Boxes: the part of a tensor a rank asks for, as one (start, stop) pair a
dimension, and where such a part lies in the tensor's bytes (C order).

Two ways to cut a dimension of ``length`` into ``n`` parts:
- ``tensor_split``: ``torch.tensor_split``'s, the first ``length % n`` parts
  one longer ([3, 3, 2, 2] for 10 over 4);
- ``chunk``: ``torch.chunk``'s, which DTensor's ``Shard`` and FSDP2 use: parts
  of ``ceil(length / n)``, the last ones shorter or empty ([3, 3, 3, 1])."""
from __future__ import annotations

import functools
import math

Box = tuple   # ((start, stop), ...), one pair a dimension

CONVENTIONS = ("tensor_split", "chunk")


def tensor_split_sizes(length: int, n: int) -> list[int]:
    base, extra = divmod(length, n)
    return [base + (1 if r < extra else 0) for r in range(n)]


def chunk_sizes(length: int, n: int) -> list[int]:
    step = -(-length // n)
    return [max(0, min(step, length - i * step)) for i in range(n)]


def split_sizes(length: int, n: int, convention: str = "tensor_split") -> list[int]:
    if convention == "tensor_split":
        return tensor_split_sizes(length, n)
    if convention == "chunk":
        return chunk_sizes(length, n)
    raise ValueError(f"unknown split convention {convention!r} (one of {CONVENTIONS})")


@functools.lru_cache(maxsize=1 << 16)   # tensors of one shape repeat
def whole(shape: tuple) -> Box:
    return tuple((0, s) for s in shape)


@functools.lru_cache(maxsize=1 << 16)   # tensors of one shape repeat
def cut(box: Box, dim: int, index: int, n: int, convention: str) -> Box:
    """Part ``index`` of ``n`` of ``box`` along ``dim``."""
    lo, hi = box[dim]
    sizes = split_sizes(hi - lo, n, convention)
    start = lo + sum(sizes[:index])
    return box[:dim] + ((start, start + sizes[index]),) + box[dim + 1:]


def extents(box: Box) -> tuple:
    return tuple(b - a for a, b in box)


def is_empty(box: Box) -> bool:
    return any(b <= a for a, b in box)


def check(box: Box, shape: tuple, what: str) -> None:
    """Raises ValueError when ``box`` is not a box of a tensor of ``shape``."""
    ok = isinstance(box, tuple) and len(box) == len(shape) and all(
        isinstance(p, tuple) and len(p) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in p) and
        0 <= p[0] <= p[1] <= s for p, s in zip(box, shape))
    if not ok:
        raise ValueError(f"{what}: {box!r} is not a part of a tensor of shape {list(shape)} "
                         f"(one (start, stop) a dimension, 0 <= start <= stop <= size)")


def _last_partial(box: Box, shape: tuple, upto: int) -> int | None:
    return next((d for d in reversed(range(upto)) if box[d] != (0, shape[d])), None)


@functools.lru_cache(maxsize=1 << 16)   # tensors of one shape repeat
def byte_range(box: Box, shape: tuple, itemsize: int) -> tuple | None:
    """(first byte, end) of a non-empty box whose bytes are one contiguous
    range of the tensor's, else None."""
    last = _last_partial(box, shape, len(shape))
    if last is None:
        return 0, math.prod(shape) * itemsize
    if any(b - a != 1 for a, b in box[:last]):
        return None
    first = sum(a * math.prod(shape[d + 1:]) for d, (a, _) in enumerate(box))
    return first * itemsize, (first + math.prod(extents(box))) * itemsize


@functools.lru_cache(maxsize=1 << 16)   # tensors of one shape repeat
def inner_dim(box: Box, shape: tuple) -> int:
    """The last dimension along which a non-empty box is not whole (0 if none)."""
    return _last_partial(box, shape, len(shape)) or 0


@functools.lru_cache(maxsize=1 << 16)   # tensors of one shape repeat
def as_rows(box: Box, shape: tuple, dim: int, itemsize: int) -> tuple | None:
    """The box as whole rows of the tensor viewed as (prod(shape[:dim]),
    bytes of the rest): ((first row, end row), (byte offset in a row, bytes));
    None when it is not such a block (it cuts a dimension after ``dim``, or
    its rows are not one contiguous range)."""
    if any(box[d] != (0, shape[d]) for d in range(dim + 1, len(shape))):
        return None
    last = _last_partial(box, shape, dim)
    if last is not None and any(b - a != 1 for a, b in box[:last]):
        return None
    first = sum(a * math.prod(shape[d + 1:dim]) for d, (a, _) in enumerate(box[:dim]))
    inner = math.prod(shape[dim + 1:]) * itemsize
    lo, hi = box[dim]
    return (first, first + math.prod(extents(box[:dim]))), (lo * inner, (hi - lo) * inner)
