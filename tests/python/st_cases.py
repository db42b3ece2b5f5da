# SPDX-License-Identifier: Apache-2.0
"""Edge files where Python's json and the safetensors package (serde_json)
part ways, each with what the package does ("load" or "refuse") and what
ufile does; they differ only where docs/PYTHON.md says why. Headers are
written as text, so that what json.dumps cannot write can be written."""
from __future__ import annotations

import struct

U8x40 = bytes(range(40))


def header_file(text: str, data: bytes = b"") -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    return struct.pack("<Q", len(raw)) + raw + data


def entry(dtype='"U8"', shape="[8, 5]", offsets="[0, 40]", extra="") -> str:
    return (f'{{"dtype": {dtype}, "shape": {shape}, "data_offsets": {offsets}'
            f'{", " + extra if extra else ""}}}')


def one(name='"w"', data=U8x40, meta="", **kw) -> bytes:
    head = f"{{{meta + ', ' if meta else ''}{name}: {entry(**kw)}}}"
    return header_file(head, data)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# The run ending in an empty tensor that sits where the run's last tensor
# begins, its name sorting after it.
RUN_END = bytes.fromhex(
    "70000000000000007b2261223a7b226474797065223a225538222c227368617065223a5b335d2c"
    "22646174615f6f666673657473223a5b302c335d7d2c227a223a7b226474797065223a225538"
    "222c227368617065223a5b305d2c22646174615f6f666673657473223a5b302c305d7d7d2020"
    "2020202020010203")

# name -> (file bytes, the package's verdict, ufile's verdict); None: not
# asserted (the package's outcome depends on its torch).
CASES = {
    "run ending in an empty tensor": (RUN_END, "load", "load"),
    "entry as an array": (header_file('{"w": ["U8", [8, 5], [0, 40]]}', U8x40), "load", "load"),
    "entry as an array of 2": (header_file('{"w": ["U8", [8, 5]]}', U8x40), "refuse", "refuse"),
    "entry as an array of 4": (header_file('{"w": ["U8", [8, 5], [0, 40], 1]}', U8x40),
                               "refuse", "refuse"),
    "metadata key twice": (one(meta='"__metadata__": {"k": "1", "k": "2"}'), "load", "load"),
    "metadata null": (one(meta='"__metadata__": null'), "load", "load"),
    "__metadata__ twice": (one(meta='"__metadata__": {}, "__metadata__": {}'),
                           "refuse", "refuse"),
    "dtype field twice": (one(extra='"dtype": "U8"'), "refuse", "refuse"),
    "unknown field twice": (one(extra='"x": 1, "x": 2'), "load", "load"),
    "entry lacks shape": (header_file('{"w": {"dtype": "U8", "data_offsets": [0, 40]}}', U8x40),
                          "refuse", "refuse"),
    # the header object is level 1, the entry 2: 125 more arrays make 127.
    "nesting 127 deep": (one(extra=f'"x": {nested(125)}'), "load", "load"),
    "nesting 128 deep": (one(extra=f'"x": {nested(126)}'), "refuse", "refuse"),
    "nesting 5000 deep": (one(extra=f'"x": {nested(5000)}'), "refuse", "refuse"),
    "NaN in a field": (one(extra='"x": NaN'), "refuse", "refuse"),
    "Infinity in a field": (one(extra='"x": Infinity'), "refuse", "refuse"),
    "-Infinity in a field": (one(extra='"x": -Infinity'), "refuse", "refuse"),
    "1e400 in a field": (one(extra='"x": 1e400'), "refuse", "refuse"),
    "400-digit integer in a field": (one(extra='"x": 1' + "0" * 400), "refuse", "refuse"),
    "1e-400 in a field": (one(extra='"x": 1e-400'), "load", "load"),
    "2**64 in a field": (one(extra=f'"x": {1 << 64}'), "load", "load"),
    "-0 in a field": (one(extra='"x": -0'), "load", "load"),
    "-0 as an offset": (one(offsets="[-0, 40]"), "refuse", "refuse"),
    "4.0 as a dimension": (one(shape="[8.0, 5]"), "refuse", "refuse"),
    "2**64 as a dimension": (one(shape=f"[{1 << 64}, 0]", offsets="[0, 0]", data=b""),
                             "refuse", "refuse"),
    "2**64 as an offset": (one(offsets=f"[0, {1 << 64}]"), "refuse", "refuse"),
    "lone surrogate in a name": (one(name='"w\\ud800"'), "refuse", "refuse"),
    "lone low surrogate in a name": (one(name='"\\udc00w"'), "refuse", "refuse"),
    "surrogate pair in a name": (one(name='"w\\ud83d\\ude00"'), "load", "load"),
    "lone surrogate in metadata": (one(meta='"__metadata__": {"k": "\\ud800"}'),
                                   "refuse", "refuse"),
    "lone surrogate in a field": (one(extra='"x": "\\udbff"'), "refuse", "refuse"),
    "dtype as a map to null": (one(dtype='{"U8": null}'), "load", "load"),
    "dtype as a map to 1": (one(dtype='{"U8": 1}'), "refuse", "refuse"),
    "dtype as a map of two": (one(dtype='{"U8": null, "I8": null}'), "refuse", "refuse"),
    "F8_E4M3FNUZ": (one(dtype='"F8_E4M3FNUZ"'), "load", "load"),
    "F8_E5M2FNUZ": (one(dtype='"F8_E5M2FNUZ"'), "load", "load"),
    "empty, dims [0, 2**62, 4]": (one(dtype='"F32"', shape=f"[0, {1 << 62}, 4]",
                                      offsets="[0, 0]", data=b""), "load", "load"),
    "empty, dims overflow first": (one(shape="[4294967296, 4294967296, 0]", offsets="[0, 0]",
                                       data=b""), "refuse", "refuse"),
    "empty, dims [0, 2**61] of F64": (one(dtype='"F64"', shape=f"[0, {1 << 61}]",
                                          offsets="[0, 0]", data=b""), "load", "load"),
    "bytes overflow": (one(dtype='"F64"', shape=f"[{1 << 61}]", offsets="[0, 0]", data=b""),
                       "refuse", "refuse"),
    "leading whitespace": (header_file(' \n{"w": ' + entry() + "}", U8x40), "load", "load"),
    # Differences (docs/PYTHON.md): names given twice, sub-byte dtypes.
    "tensor name twice": (header_file('{"w": ' + entry() + ', "w": ' + entry() + "}", U8x40),
                          "load", "refuse"),
    "sub-byte dtype F4": (one(dtype='"F4"', shape="[80]"), None, "refuse"),
}
