# SPDX-License-Identifier: Apache-2.0
"""The byte layout the safetensors package writes, computed from names,
dtypes and shapes alone (no tensor data), so a save can write every tensor
straight from its memory at its final offset.

The package's rule: tensors sorted by dtype, in the order of its Dtype
enumeration, largest first, then by name (byte order of the UTF-8 name, which
is code-point order); data offsets consecutive from 0; the header is the
compact JSON object (``__metadata__`` first when given, then the tensors in
that order, each ``{"dtype", "shape", "data_offsets"}``), padded with spaces to
a multiple of 8 bytes; the file is the 8-byte little-endian header length, the
header, and the data. Strings are escaped as serde_json escapes them, which is
what Python's json does with ensure_ascii=False."""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

from ._format import MAX_HEADER_BYTES, SafetensorError

# The safetensors package's Dtype enumeration, in declaration order: the sort
# key of its layout (descending).
DTYPE_ORDER = ("BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
               "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32",
               "U32", "F32", "C64", "F64", "I64", "U64")
_RANK = {name: i for i, name in enumerate(DTYPE_ORDER)}

# Framework dtype names (torch's attribute, numpy's dtype.name) -> safetensors
# dtype, as the package maps them; any other name is "not covered".
DTYPE_OF_NAME = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "uint16": "U16",
    "float16": "F16", "bfloat16": "BF16", "int32": "I32", "uint32": "U32", "float32": "F32",
    "complex64": "C64", "float64": "F64", "int64": "I64", "uint64": "U64",
    "float8_e5m2": "F8_E5M2", "float8_e4m3fn": "F8_E4M3", "float8_e8m0fnu": "F8_E8M0",
    "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2fnuz": "F8_E5M2FNUZ",
}
# The package's list of the dtype names it takes, in its message's order.
_SUPPORTED = ("bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, float16, "
              "float32, float64, bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, "
              "float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn_x2, complex64")
# Taken by the package (packed 4-bit pairs), not by ufile.
UNSUPPORTED_HERE = ("float4_e2m1fn_x2",)


@dataclass
class Entry:
    """One tensor to write: its safetensors dtype, shape, byte count and the
    object holding its bytes (a contiguous tensor or array, or bytes);
    ``begin`` and ``end`` are set by ``layout`` (relative to the data)."""
    name: str
    dtype: str
    shape: tuple
    nbytes: int
    source: Any
    begin: int = 0
    end: int = 0


def dtype_of(name: str) -> str:
    """The safetensors dtype of a framework dtype name; SafetensorError (the
    package's refusal, its words) for a dtype it does not take, and for the
    packed 4-bit type it takes and ufile does not."""
    if name in UNSUPPORTED_HERE:
        raise SafetensorError(f"dtype {name} (packed 4-bit pairs) is not saved by ufile")
    try:
        return DTYPE_OF_NAME[name]
    except KeyError:
        raise SafetensorError(f'Unknown dtype "{name}". Supported dtypes: {_SUPPORTED}') \
            from None


def check_metadata(metadata: Any) -> dict | None:
    """The metadata map, checked: None or a dict of str to str (TypeError
    otherwise, as the package's argument conversion raises)."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise TypeError(f"argument 'metadata': '{type(metadata).__name__}' object is not an "
                        f"instance of 'dict'")
    for key, value in metadata.items():
        for what in (key, value):
            if not isinstance(what, str):
                raise TypeError(f"argument 'metadata': '{type(what).__name__}' object is not "
                                f"an instance of 'str'")
    return metadata


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SafetensorError(f"a name or metadata string is not valid Unicode "
                              f"(an unpaired surrogate): {exc}") from None
    return text


def order(entries: list[Entry]) -> list[Entry]:
    """Entries in the package's file order."""
    return sorted(entries, key=lambda e: (-_RANK[e.dtype], e.name.encode("utf-8", "surrogatepass")))


def header_text(entries: list[Entry], metadata: dict | None) -> bytes:
    """The padded JSON header of entries already in file order with offsets."""
    parts = []
    if metadata is not None:
        parts.append('"__metadata__":' + _json(metadata))
    for e in entries:
        parts.append(f'{_json(e.name)}:{{"dtype":"{e.dtype}","shape":'
                     f'[{",".join(str(int(d)) for d in e.shape)}],'
                     f'"data_offsets":[{e.begin},{e.end}]}}')
    text = ("{" + ",".join(parts) + "}").encode("utf-8")
    text += b" " * (-len(text) % 8)
    if len(text) > MAX_HEADER_BYTES:
        raise SafetensorError(f"the header would be {len(text)} bytes, over the "
                              f"{MAX_HEADER_BYTES}-byte limit of the format")
    return text


def layout(entries: list[Entry], metadata: dict | None) -> tuple[bytes, list[Entry], int]:
    """(the 8 + N header bytes, entries in file order with their offsets set,
    the file's size)."""
    out = order(entries)
    pos = 0
    for e in out:
        e.begin, e.end = pos, pos + e.nbytes
        pos = e.end
    text = header_text(out, metadata)
    head = struct.pack("<Q", len(text)) + text
    return head, out, len(head) + pos
