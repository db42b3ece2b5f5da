# SPDX-License-Identifier: Apache-2.0
"""The safetensors file format: header parsing and the checks the safetensors
package makes, each failure naming the file and the tensor.

Layout: 8-byte little-endian header length N, N bytes of JSON (an object; an
optional "__metadata__" string-to-string map; each tensor
{"dtype", "shape", "data_offsets": [begin, end]} relative to the data section,
or the array [dtype, shape, data_offsets]), then the data section, which the
tensors cover exactly, without gaps or overlaps. What the package accepts and
refuses is followed (docs/PYTHON.md lists the differences)."""
from __future__ import annotations

import errno
import json
import os
import stat
import struct
from dataclasses import dataclass

from . import _json

try:  # catching safetensors.SafetensorError then catches ours too
    from safetensors import SafetensorError as _Base  # type: ignore
except Exception:  # noqa: BLE001 - absent or broken: a plain Exception base
    _Base = Exception


class SafetensorError(_Base):  # type: ignore[misc, valid-type]
    """A file is not a valid safetensors file, or a tensor is missing from it
    (what the safetensors package raises, and a subclass of its class when the
    package is installed)."""


MAX_HEADER_BYTES = 100_000_000  # the safetensors package's limit
INDEX = "model.safetensors.index.json"   # a sharded checkpoint's index (Hugging Face)

# safetensors dtype -> (bytes per element, torch attribute, numpy dtype name or None)
DTYPES = {
    "BOOL": (1, "bool", "bool"), "U8": (1, "uint8", "uint8"), "I8": (1, "int8", "int8"),
    "F8_E5M2": (1, "float8_e5m2", None), "F8_E4M3": (1, "float8_e4m3fn", None),
    "F8_E8M0": (1, "float8_e8m0fnu", None), "F8_E4M3FNUZ": (1, "float8_e4m3fnuz", None),
    "F8_E5M2FNUZ": (1, "float8_e5m2fnuz", None),
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


_FIELDS = ("dtype", "shape", "data_offsets")
_U64 = 1 << 64


def _usize(value: object) -> bool:
    """An integer the package reads as a usize (0 <= value < 2**64)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _U64


def _fields(path: str, name: str, entry: object) -> tuple:
    """(dtype, shape, data_offsets) of an entry, an object or a 3-element array."""
    if isinstance(entry, _json.Pairs):
        got: dict = {}
        for key, value in entry:
            if key in _FIELDS and key in got:
                raise _fail(path, f"duplicate field {key!r}", name)
            got[key] = value  # other fields are ignored, as by the package
        missing = [f for f in _FIELDS if f not in got]
        if missing:
            raise _fail(path, f"entry lacks {', '.join(missing)}", name)
        return tuple(got[f] for f in _FIELDS)
    if isinstance(entry, list) and len(entry) == 3:
        return tuple(entry)
    raise _fail(path, "entry is not an object (or a [dtype, shape, data_offsets] array)", name)


def _nbytes(shape: list, size: int) -> int | None:
    """Bytes of the shape, None where the package's checked product overflows
    64 bits (it multiplies left to right: a 0 seen first keeps it 0)."""
    n = 1
    for dim in shape:
        n *= dim
        if n >= _U64:
            return None
    n *= size
    return n if n < _U64 else None


def _tensor(path: str, name: str, entry: object) -> TensorInfo:
    dtype, shape, offsets = _fields(path, name, entry)
    if isinstance(dtype, _json.Pairs) and len(dtype) == 1 and dtype[0][1] is None:
        dtype = dtype[0][0]  # {"F32": null}: serde's map form of a unit variant
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise _fail(path, f"unknown or unsupported dtype {dtype!r}", name)
    if not isinstance(shape, list) or not all(_usize(d) for d in shape):
        raise _fail(path, f"shape {shape!r} is not a list of integers in [0, 2**64)", name)
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(_usize(o) for o in offsets) or offsets[1] < offsets[0]):
        raise _fail(path, f"data_offsets {offsets!r} is not [begin, end] with begin <= end", name)
    want = _nbytes(shape, DTYPES[dtype][0])
    if want is None:
        raise _fail(path, f"shape {shape} of {dtype} overflows 64 bits", name)
    if want != offsets[1] - offsets[0]:
        raise _fail(path, f"shape {shape} of {dtype} is {want} bytes but data_offsets "
                          f"{offsets} span {offsets[1] - offsets[0]}", name)
    return TensorInfo(name, dtype, tuple(shape), offsets[0], offsets[1])


def _metadata(path: str, value: object) -> dict | None:
    """The __metadata__ map (null: None); a key given twice keeps its last value."""
    if value is None:
        return None
    if not isinstance(value, _json.Pairs) or not all(isinstance(v, str) for _, v in value):
        raise _fail(path, "__metadata__ is not a map of strings to strings")
    return dict(value)


def _check_coverage(path: str, tensors: dict, data_start: int, data_len: int) -> None:
    pos = 0
    for t in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if t.begin != pos:
            what = "overlaps the previous tensor" if t.begin < pos else "leaves a gap before it"
            raise _fail(path, f"data_offsets [{t.begin}, {t.end}] {what}", t.name)
        if t.end > data_len:
            # Contiguous so far: the header describes more bytes than the file has.
            raise _fail(path, f"the file is {data_start + data_len} bytes, shorter than its "
                              f"header says (this tensor ends at byte {data_start + t.end}): "
                              f"truncated?", t.name)
        pos = t.end
    if pos != data_len:
        raise _fail(path, f"the tensors cover {pos} bytes of the {data_len}-byte data section")


def _document(path: str, text: bytes) -> _json.Pairs:
    try:
        doc = _json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(path, f"header is not valid JSON: {exc}") from None
    if not isinstance(doc, _json.Pairs):
        kind = "array" if isinstance(doc, list) else type(doc).__name__
        raise _fail(path, f"header is a JSON {kind}, not an object")
    return doc


def parse(path: str, head: bytes, file_size: int) -> Header:
    """Validates a header (``head`` holds at least the first 8 + N bytes)."""
    if file_size < 8 or len(head) < 8:
        raise _fail(path, f"file is {file_size} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_HEADER_BYTES:
        raise _fail(path, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
    if 8 + n > file_size:
        raise _fail(path, f"header length {n} runs past the end of the {file_size}-byte file: "
                          f"truncated?")
    if len(head) < 8 + n:
        raise _fail(path, "header truncated")
    meta, tensors, seen_meta = None, {}, False
    for name, entry in _document(path, head[8:8 + n]):
        if name == "__metadata__":
            if seen_meta:
                raise _fail(path, "duplicate key in the header", name)
            meta, seen_meta = _metadata(path, entry), True
        elif name in tensors:
            raise _fail(path, "duplicate key in the header", name)
        else:
            tensors[name] = _tensor(path, name, entry)
    _check_coverage(path, tensors, 8 + n, file_size - 8 - n)
    return Header(path, 8 + n, file_size, meta, tensors)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_file(path: str) -> int:
    """A read-only descriptor of ``path``, a regular file or a directory (the
    caller refuses that); SafetensorError for anything else, OSError as raised.
    Opened with O_NONBLOCK, which regular files ignore, so that a FIFO cannot
    keep the open waiting for a writer."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return fd
    os.close(fd)
    kind = next((name for test, name in _KINDS if test(mode)), None)
    raise SafetensorError(f"{path} is {kind}, not a regular file" if kind
                          else f"{path} is not a regular file")


def read_weight_map(index: str) -> dict[str, str]:
    """An index file's ``weight_map`` (tensor name -> shard file name, as
    written); SafetensorError for one that is not valid, OSError as raised."""
    try:
        with os.fdopen(open_file(index), encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SafetensorError(f"{index}: not valid JSON: {exc}") from None
    wmap = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        raise SafetensorError(f"{index}: no weight_map of tensor names to file names")
    return wmap


def read_header(path: str) -> Header:
    """Reads and validates the header of the safetensors file at ``path``."""
    fd = open_file(path)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory, not a .safetensors file "
                                    "(load_checkpoint reads a checkpoint directory)", path)
        size = st.st_size
        head = os.pread(fd, 8, 0)
        if len(head) == 8:
            (n,) = struct.unpack("<Q", head)
            if 8 + n <= size and n <= MAX_HEADER_BYTES:
                head += os.pread(fd, n, 8)
        return parse(path, head, size)
    finally:
        os.close(fd)
