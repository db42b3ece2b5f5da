# SPDX-License-Identifier: Apache-2.0
"""``save_file`` and ``save`` as the safetensors package defines them (torch
and numpy): the same bytes for the same input, the same refusals. ``save_file``
writes through ufile from the tensors' own memory (GPU tensors: device memory
to the file, no host copy made by Python) and is crash-safe: the file appears
under its name complete and flushed, or not at all (see _save_write)."""
from __future__ import annotations

import os
from typing import Any

from ._save_format import Entry, layout
from ._save_inputs import numpy_entries, torch_entries
from ._save_write import WriteOptions, resolve_final, save_atomic


def _options(direct: bool, request_bytes: int | None, inflight: int | None) -> WriteOptions:
    opts = WriteOptions(direct=direct)
    if request_bytes is not None:
        opts.request_bytes = int(request_bytes)
    if inflight is not None:
        opts.inflight = int(inflight)
    opts.__post_init__()
    return opts


def save_file(tensors: dict[str, Any], filename: str | os.PathLike,
              metadata: dict[str, str] | None = None, *, direct: bool = False,
              request_bytes: int | None = None, inflight: int | None = None) -> None:
    """Saves a dict of torch tensors (CPU or CUDA) to ``filename``, byte for byte
    the file ``safetensors.torch.save_file`` writes.

    The file is written under a temporary name in the same directory, flushed
    (fsync), renamed over ``filename`` and the directory flushed: ``filename``
    holds the previous file or the complete new one, never a partial one.
    ``direct=True`` writes with O_DIRECT where the file system allows it.
    ``request_bytes`` (default 64 MiB) and ``inflight`` (8) shape the
    cuFileWrite calls. Raises what the package raises for its refusals, and
    OSError (errno set, the file named) when writing fails. The tensors must not
    change until it returns."""
    _write(torch_entries(tensors, metadata), filename, metadata,
           _options(direct, request_bytes, inflight))


def save(tensors: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes ``safetensors.torch.save`` returns for the same tensors."""
    import torch
    entries = torch_entries(tensors, metadata)
    head, ordered, total = layout(entries, metadata)
    out = bytearray(total)
    out[:len(head)] = head
    for e in ordered:
        if e.source is not None:
            dst = torch.frombuffer(out, dtype=torch.uint8, count=e.nbytes,
                                   offset=len(head) + e.begin)
            dst.copy_(e.source.reshape(-1).view(torch.uint8))
    return bytes(out)


def save_file_numpy(tensor_dict: dict[str, Any], filename: str | os.PathLike,
                    metadata: dict[str, str] | None = None, *, direct: bool = False,
                    request_bytes: int | None = None, inflight: int | None = None) -> None:
    """``safetensors.numpy.save_file`` (its argument names): a dict of numpy
    arrays, written as ``save_file`` writes (crash-safe, through ufile)."""
    _write(numpy_entries(tensor_dict, metadata), filename, metadata,
           _options(direct, request_bytes, inflight))


def save_numpy(tensor_dict: dict[str, Any], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes ``safetensors.numpy.save`` returns."""
    import numpy as np
    entries = numpy_entries(tensor_dict, metadata)
    head, ordered, total = layout(entries, metadata)
    out = bytearray(total)
    out[:len(head)] = head
    view = np.frombuffer(out, dtype=np.uint8)
    for e in ordered:
        if e.source is not None:
            start = len(head) + e.begin
            view[start:start + e.nbytes] = e.source.reshape(-1).view(np.uint8)
    return bytes(out)


def _write(entries: list[Entry], filename: Any, metadata: dict | None,
           opts: WriteOptions) -> None:
    final = resolve_final(filename)
    head, ordered, total = layout(entries, metadata)
    save_atomic(final, head, ordered, total, opts)
