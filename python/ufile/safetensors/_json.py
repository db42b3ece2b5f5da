# SPDX-License-Identifier: Apache-2.0
"""The header's JSON read as the safetensors package reads it (serde_json).

Python's json accepts what serde_json refuses, and the package refuses those
files: nesting deeper than serde_json's limit, NaN/Infinity, numbers beyond the
double range, escaped lone surrogates. An integer outside -2**63..2**64-1, or
-0, is a float to serde_json, which an offset or a dimension must not be.
Objects come back as ``Pairs``, tuples of (key, value) in order with
duplicates kept (what a duplicate means depends on where it is); arrays as
lists."""
from __future__ import annotations

import itertools
import json
import re

# serde_json's recursion limit is 128: the 128th nested array or object fails.
MAX_DEPTH = 127


Pairs = tuple  # a JSON object: its (key, value) pairs in order


class JsonError(ValueError):
    """Text the package's JSON reader refuses; the message says why."""


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Integers of 21 digits or more are past 2**64, floats to serde_json.
_LONG_INT = re.compile(r"[0-9]{21}")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _skeleton(text: str) -> str:
    """text without its strings."""
    if '\\"' not in text:  # no escaped quote: every quote opens or closes a string
        return "".join(text.split('"')[0::2])
    return _STRING.sub("", text)


def _check_depth(skeleton: str) -> None:
    if skeleton.count("[") + skeleton.count("{") <= MAX_DEPTH:
        return
    steps = (_STEP[c] for c in _BRACKET.findall(skeleton))
    if max(itertools.accumulate(steps), default=0) > MAX_DEPTH:
        raise JsonError(f"nested deeper than {MAX_DEPTH} arrays and objects")


def _constant(name: str) -> float:
    raise JsonError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise JsonError(f"number {text[:40]} is out of the double range")
    return value


def _int(text: str) -> int | float:
    if len(text) <= 20:
        value = int(text)
        if -(1 << 63) <= value < (1 << 64) and text != "-0":
            return value
    return _float(text)  # serde_json reads it as a float


def _no_lone_surrogates(value: object) -> None:
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            if _SURROGATE.search(v):
                raise JsonError(f"string {v[:40]!r} holds an unpaired surrogate escape")
        elif isinstance(v, Pairs):
            todo.extend(itertools.chain.from_iterable(v))
        elif isinstance(v, list):
            todo.extend(v)


def loads(text: str) -> object:
    """The value of ``text``; raises JsonError (or ValueError) where serde_json
    refuses it."""
    skeleton = _skeleton(text)
    _check_depth(skeleton)
    odd_ints = "-0" in skeleton or _LONG_INT.search(skeleton)
    hooks = {"parse_int": _int} if odd_ints else {}
    try:
        doc = json.loads(text, object_pairs_hook=Pairs, parse_constant=_constant,
                         parse_float=_float, **hooks)
    except RecursionError:
        raise JsonError(f"nested deeper than {MAX_DEPTH} arrays and objects") from None
    if "\\u" in text:  # only an escape makes a surrogate
        _no_lone_surrogates(doc)
    return doc
