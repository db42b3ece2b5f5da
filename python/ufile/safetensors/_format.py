# SPDX-License-Identifier: Apache-2.0
"""The safetensors file format: header parsing and the checks the safetensors
package makes, each failure naming the file and the tensor.

Layout: 8-byte little-endian header length N, N bytes of JSON (an object; an
optional "__metadata__" string-to-string map; each tensor
{"dtype", "shape", "data_offsets": [begin, end]} relative to the data section),
then the data section, which the tensors cover exactly, without gaps or overlaps."""
from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass

try:  # catching safetensors.SafetensorError then catches ours too
    from safetensors import SafetensorError as _Base  # type: ignore
except Exception:  # noqa: BLE001 - absent or broken: a plain Exception base
    _Base = Exception


class SafetensorError(_Base):  # type: ignore[misc, valid-type]
    """A file is not a valid safetensors file, or a tensor is missing from it
    (what the safetensors package raises, and a subclass of its class when the
    package is installed)."""


MAX_HEADER_BYTES = 100_000_000  # the safetensors package's limit

# safetensors dtype -> (bytes per element, torch attribute, numpy dtype name or None)
DTYPES = {
    "BOOL": (1, "bool", "bool"), "U8": (1, "uint8", "uint8"), "I8": (1, "int8", "int8"),
    "F8_E5M2": (1, "float8_e5m2", None), "F8_E4M3": (1, "float8_e4m3fn", None),
    "F8_E8M0": (1, "float8_e8m0fnu", None),
    "I16": (2, "int16", "int16"), "U16": (2, "uint16", "uint16"),
    "F16": (2, "float16", "float16"), "BF16": (2, "bfloat16", None),
    "I32": (4, "int32", "int32"), "U32": (4, "uint32", "uint32"),
    "F32": (4, "float32", "float32"), "C64": (8, "complex64", "complex64"),
    "F64": (8, "float64", "float64"), "I64": (8, "int64", "int64"),
    "U64": (8, "uint64", "uint64"),
}


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple
    begin: int  # relative to the data section
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass
class Header:
    path: str
    data_start: int  # file offset of the data section (8 + N)
    file_size: int
    metadata: dict | None
    tensors: dict  # name -> TensorInfo, in the JSON's order

    def offset_order(self) -> list[str]:
        """Names in the order of their data (then by name, for empty tensors)."""
        return [t.name for t in sorted(self.tensors.values(), key=lambda t: (t.begin, t.name))]

    def info(self, name: str) -> TensorInfo:
        try:
            return self.tensors[name]
        except KeyError:
            raise SafetensorError(f"File does not contain tensor {name}: {self.path}") from None


def _fail(path: str, what: str, name: str | None = None) -> SafetensorError:
    where = f"{path}" + (f", tensor {name!r}" if name is not None else "")
    return SafetensorError(f"invalid safetensors file ({where}): {what}")


def _pairs_no_duplicates(path: str):
    def hook(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise _fail(path, "duplicate key in the header", key)
            seen[key] = value
        return seen
    return hook


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tensor(path: str, name: str, entry: object) -> TensorInfo:
    if not isinstance(entry, dict):
        raise _fail(path, "entry is not an object", name)
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise _fail(path, f"unknown or unsupported dtype {dtype!r}", name)
    if not isinstance(shape, list) or not all(_int(d) and d >= 0 for d in shape):
        raise _fail(path, f"shape {shape!r} is not a list of non-negative integers", name)
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(_int(o) and o >= 0 for o in offsets) or offsets[1] < offsets[0]):
        raise _fail(path, f"data_offsets {offsets!r} is not [begin, end] with begin <= end", name)
    want = math.prod(shape) * DTYPES[dtype][0]
    if want != offsets[1] - offsets[0]:
        raise _fail(path, f"shape {shape} of {dtype} is {want} bytes but data_offsets "
                          f"{offsets} span {offsets[1] - offsets[0]}", name)
    return TensorInfo(name, dtype, tuple(shape), offsets[0], offsets[1])


def _check_coverage(path: str, tensors: dict, data_len: int) -> None:
    pos = 0
    for t in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if t.begin != pos:
            what = "overlaps the previous tensor" if t.begin < pos else "leaves a gap before it"
            raise _fail(path, f"data_offsets [{t.begin}, {t.end}] {what}", t.name)
        if t.end > data_len:
            raise _fail(path, f"data_offsets end {t.end} is past the data section "
                              f"({data_len} bytes)", t.name)
        pos = t.end
    if pos != data_len:
        raise _fail(path, f"the tensors cover {pos} bytes of the {data_len}-byte data section")


def parse(path: str, head: bytes, file_size: int) -> Header:
    """Validates a header (``head`` holds at least the first 8 + N bytes)."""
    if file_size < 8 or len(head) < 8:
        raise _fail(path, f"file is {file_size} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER_BYTES:
        raise _fail(path, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
    if 8 + n > file_size:
        raise _fail(path, f"header length {n} runs past the end of the {file_size}-byte file")
    if len(head) < 8 + n:
        raise _fail(path, "header truncated")
    try:
        doc = json.loads(head[8:8 + n].decode("utf-8"),
                         object_pairs_hook=_pairs_no_duplicates(path))
    except SafetensorError:
        raise
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(path, f"header is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise _fail(path, f"header is a JSON {type(doc).__name__}, not an object")
    meta = doc.pop("__metadata__", None)
    if meta is not None and (not isinstance(meta, dict) or
                             not all(isinstance(v, str) for v in meta.values())):
        raise _fail(path, "__metadata__ is not a map of strings to strings")
    tensors = {name: _tensor(path, name, entry) for name, entry in doc.items()}
    _check_coverage(path, tensors, file_size - 8 - n)
    return Header(path, 8 + n, file_size, meta, tensors)


def read_header(path: str) -> Header:
    """Reads and validates the header of the safetensors file at ``path``."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, 8, 0)
        if len(head) == 8:
            (n,) = struct.unpack("<Q", head)
            if 8 + n <= size and n <= MAX_HEADER_BYTES:
                head += os.pread(fd, n, 8)
        return parse(path, head, size)
    finally:
        os.close(fd)
