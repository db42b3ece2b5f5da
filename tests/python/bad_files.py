# SPDX-License-Identifier: Apache-2.0
"""The bad-input table: name -> file bytes (from the independent writer), and
the words the error message must contain (besides the file's path)."""
from __future__ import annotations

import struct

from st_writer import encode, raw_file

F32x4 = b"\x00" * 16


def _entry(dtype="F32", shape=(4,), offsets=(0, 16)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


CASES = {
    "empty file": (b"", "shorter than"),
    "truncated length": (b"\x10\x00\x00", "shorter than"),
    "header length past the end": (struct.pack("<Q", 1000) + b"{}", "past the end"),
    "header length huge": (struct.pack("<Q", 1 << 62) + b"{}", "exceeds"),
    "malformed JSON": (raw_file(b'{"a": {', b""), "not valid JSON"),
    "non-object JSON": (raw_file(b"[1, 2, 3]", b""), "not an object"),
    "non-UTF-8 header": (raw_file(b'{"\xff": 1}', b""), "not valid JSON"),
    "entry not an object": (raw_file({"w": [1, 2]}, F32x4), "'w'"),
    "offsets past the data": (raw_file({"w": _entry(offsets=(0, 32), shape=(8,))}, F32x4),
                              "'w'"),
    "data truncated": (encode([("a", "F32", (4,), F32x4), ("b", "F32", (4,), F32x4)])[:-8],
                       "shorter than its header says (this tensor ends at byte"),
    "offsets overlapping": (raw_file({"a": _entry(), "b": _entry(offsets=(8, 24))},
                                     F32x4 + b"\x00" * 8), "'b'"),
    "offsets with a gap": (raw_file({"a": _entry(offsets=(4, 20))}, b"\x00" * 20), "'a'"),
    "data past the tensors": (raw_file({"a": _entry()}, F32x4 + b"\x00" * 4), "cover"),
    "offsets reversed": (raw_file({"a": _entry(offsets=(16, 0))}, F32x4), "'a'"),
    "unknown dtype": (raw_file({"w": _entry(dtype="F33")}, F32x4), "'w'"),
    "shape and size disagree": (raw_file({"w": _entry(shape=(2, 3))}, F32x4), "'w'"),
    "negative dimension": (raw_file({"w": _entry(shape=(-4,))}, F32x4), "'w'"),
    "metadata not strings": (raw_file({"__metadata__": {"a": 1}, "w": _entry()}, F32x4),
                             "__metadata__"),
    "duplicate tensor name": (raw_file(b'{"w": {"dtype": "F32", "shape": [4], "data_offsets":'
                                       b' [0, 16]}, "w": {"dtype": "F32", "shape": [4], '
                                       b'"data_offsets": [0, 16]}}', F32x4), "'w'"),
}

GOOD = encode([("w", "F32", (4,), F32x4)])
