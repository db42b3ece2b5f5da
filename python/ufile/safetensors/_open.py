# SPDX-License-Identifier: Apache-2.0
"""safe_open: lazy access to one safetensors file, as in the safetensors package."""
from __future__ import annotations

import math
import os
from typing import Any

from . import _engine, _frameworks
from ._format import DTYPES, SafetensorError, TensorInfo, read_header
from ._loader import Options


class safe_open:  # noqa: N801 - the safetensors package's name
    """``safe_open(path, framework="pt", device="cpu", **options)``.

    ``get_tensor`` and ``get_slice(...)[...]`` read only the bytes they need
    (straight into the returned tensor's own storage) through ufile. Options as
    for load_file (``direct``, ``request_bytes``, ``inflight``)."""

    def __init__(self, filename: str | os.PathLike, framework: str = "pt",
                 device: Any = "cpu", **options: Any):
        self.path = os.fspath(filename)
        self._fw = _frameworks.get(framework)
        self._device = _frameworks.normalize_device(device)
        self._opts = Options(**options).resolved()
        self._header = read_header(self.path)
        self._file = _engine.open_for_read(self.path, self._opts.direct)
        self._reader = _engine.Reader(self._opts.inflight)

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._reader.close()
            self._file.close()
            self._file = None

    def keys(self) -> list[str]:
        """Tensor names, sorted (as the safetensors package returns them)."""
        return sorted(self._header.tensors)

    def offset_keys(self) -> list[str]:
        """Tensor names in the order of their data in the file."""
        return self._header.offset_order()

    def metadata(self) -> dict[str, str] | None:
        """The header's "__metadata__" map, or None."""
        return None if self._header.metadata is None else dict(self._header.metadata)

    def _read(self, dest: Any, size: int, file_offset: int, what: str) -> None:
        if self._file is None:
            raise SafetensorError(f"{self.path}: file is closed")
        pieces = _engine.split(self._file, self._fw.ptr(dest), size, file_offset, what,
                               self._opts.request_bytes)
        _engine.wait_all(self._reader.submit(pieces))

    def get_tensor(self, name: str) -> Any:
        """The tensor ``name``, in its own storage on the device."""
        info = self._header.info(name)
        out = self._fw.empty(info, self.path, self._device)
        self._read(out, info.nbytes, self._header.data_start + info.begin, f"tensor {name!r}")
        return out

    def get_slice(self, name: str) -> "SafeSlice":
        """A lazy slice: ``get_slice(name)[a:b]`` reads only rows a..b."""
        return SafeSlice(self, self._header.info(name))


class SafeSlice:
    """Indexing reads the rows (first dimension) the index covers, then applies
    the index; row slices read only their own bytes."""

    def __init__(self, owner: safe_open, info: TensorInfo):
        self._owner, self._info = owner, info

    def get_shape(self) -> list[int]:
        return list(self._info.shape)

    def get_dtype(self) -> str:
        return self._info.dtype

    def __len__(self) -> int:
        if not self._info.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._info.shape[0]

    def __getitem__(self, index: Any) -> Any:
        info, owner = self._info, self._owner
        idx = _expand(index, len(info.shape), info.name)
        if not info.shape:
            return owner.get_tensor(info.name)[idx]
        rows = info.shape[0]
        row_bytes = math.prod(info.shape[1:]) * DTYPES[info.dtype][0]
        first, last, local = _row_range(idx[0], rows, info.name)
        n = max(0, last - first)
        part = TensorInfo(info.name, info.dtype, (n,) + info.shape[1:], 0, n * row_bytes)
        buf = owner._fw.empty(part, owner.path, owner._device)
        owner._read(buf, part.nbytes, owner._header.data_start + info.begin + first * row_bytes,
                    f"tensor {info.name!r} rows [{first}, {last})")
        out = buf[(local,) + idx[1:]]
        return out.contiguous() if hasattr(out, "contiguous") else out.copy()


def _expand(index: Any, ndim: int, name: str) -> tuple:
    idx = index if isinstance(index, tuple) else (index,)
    if any(i is Ellipsis for i in idx):
        pos = idx.index(Ellipsis)
        fill = ndim - (len(idx) - 1)
        idx = idx[:pos] + (slice(None),) * fill + idx[pos + 1:]
    if len(idx) > ndim:
        raise SafetensorError(f"tensor {name!r}: {len(idx)} indices for {ndim} dimensions")
    for i in idx:
        if not isinstance(i, (slice, int)) or isinstance(i, bool):
            raise SafetensorError(f"tensor {name!r}: unsupported index {i!r} (ints and slices)")
    return idx + (slice(None),) * (ndim - len(idx))


def _row_range(i: int | slice, rows: int, name: str) -> tuple[int, int, int | slice]:
    """(first row, end row, the index relative to the first row)."""
    if isinstance(i, int):
        j = i + rows if i < 0 else i
        if not 0 <= j < rows:
            raise SafetensorError(f"tensor {name!r}: index {i} out of range for {rows} rows")
        return j, j + 1, 0
    start, stop, step = i.indices(rows)
    picked = range(start, stop, step)
    if not picked:
        return 0, 0, slice(0, 0)
    lo, hi = min(picked), max(picked) + 1
    return lo, hi, slice(start - lo, (stop - lo) if stop - lo >= 0 else None, step)
