# SPDX-License-Identifier: Apache-2.0
"""The header's JSON read as the safetensors package reads it (serde_json).

Python's json accepts what serde_json refuses, and the package refuses those
files: nesting deeper than serde_json's limit, NaN/Infinity, numbers beyond the
double range, escaped lone surrogates. An integer outside -2**63..2**64-1, or
-0, is a float to serde_json, which an offset or a dimension must not be.
Objects come back as ``Pairs`` (every key in order, duplicates kept): what a
duplicate means depends on where it is."""
from __future__ import annotations

import itertools
import json
import re

# serde_json's recursion limit is 128: the 128th nested array or object fails.
MAX_DEPTH = 127


class Pairs(list):
    """A JSON object: its (key, value) pairs in order."""


class JsonError(ValueError):
    """Text the package's JSON reader refuses; the message says why."""


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _check_depth(text: str) -> None:
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    steps = (_STEP[c] for c in _BRACKET.findall(_STRING.sub("", text)))
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
    _check_depth(text)
    try:
        doc = json.loads(text, object_pairs_hook=Pairs, parse_constant=_constant,
                         parse_float=_float, parse_int=_int)
    except RecursionError:
        raise JsonError(f"nested deeper than {MAX_DEPTH} arrays and objects") from None
    if "\\u" in text:  # only an escape makes a surrogate
        _no_lone_surrogates(doc)
    return doc
