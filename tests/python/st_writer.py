# SPDX-License-Identifier: Apache-2.0
"""A minimal safetensors writer, independent of the code under test: struct for
the length, json for the header, raw bytes for the data."""
from __future__ import annotations

import json
import struct


def encode(entries: list, metadata: dict | None = None, align: int = 8) -> bytes:
    """entries: (name, dtype, shape, raw bytes) in file order. The header is
    padded with spaces to ``align`` bytes (1: no padding)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in entries:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return raw_file(header, data, align)


def raw_file(header: object, data: bytes, align: int = 8) -> bytes:
    """Any header (a JSON-able object, or bytes used as they are) and data."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    if align > 1:
        text += b" " * ((align - (8 + len(text)) % align) % align)
    return struct.pack("<Q", len(text)) + text + data


def write(path: str, entries: list, metadata: dict | None = None, align: int = 8) -> str:
    with open(path, "wb") as f:
        f.write(encode(entries, metadata, align))
    return path
