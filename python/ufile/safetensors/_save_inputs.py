# SPDX-License-Identifier: Apache-2.0
"""What a save takes: a dict of torch tensors or numpy arrays, checked as the
safetensors package checks it (same exception types and messages), turned into
layout entries whose sources are the caller's memory (no copy, except where the
package copies too: numpy arrays that are not C-contiguous little-endian)."""
from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any

from ._format import SafetensorError
from ._save_format import DTYPE_OF_NAME, UNSUPPORTED_HERE, Entry, check_metadata, dtype_of

_SHARED = """
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {failing}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """  # the package's message, as it words it


def _arguments(tensors: dict, metadata: Any) -> None:
    """The checks of the package's argument conversion: str keys, then the
    metadata (a dict of str to str, or None)."""
    for k in tensors:
        if not isinstance(k, str):
            raise TypeError(f"argument 'tensor_dict': '{type(k).__name__}' object is not an "
                            f"instance of 'str'")
    check_metadata(metadata)
    if "__metadata__" in tensors:  # the package writes it, and then cannot load the file
        raise SafetensorError("tensor name '__metadata__' is the format's metadata key: a "
                              "file with a tensor of that name cannot be loaded")


def torch_entries(tensors: Any, metadata: Any = None) -> list[Entry]:
    """Entries of a dict of torch tensors; raises what the package raises for
    a non-dict, a non-tensor, a sparse tensor, tensors sharing memory and a
    non-contiguous tensor (in that order), and for a dtype it does not cover."""
    import torch
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for k, v in tensors.items():
        if not isinstance(v, torch.Tensor):
            raise ValueError(f"Key `{k}` is invalid, expected torch.Tensor but received "
                             f"{type(v)}")
    sparse = [k for k, v in tensors.items() if v.layout != torch.strided]
    if sparse:
        raise ValueError(f"You are trying to save a sparse tensors: `{sparse}` which this "
                         "library does not support. You can make it a dense tensor before "
                         "saving with `.to_dense()` but be aware this might make a much larger "
                         "file than needed.")
    failing = [names for names in shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(_SHARED.format(failing=failing))
    out = []
    for k, v in tensors.items():
        if not v.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{k}` which is not allowed. "
                "It either means you are trying to save tensors which are reference of each "
                "other in which case it's recommended to save only the full tensors, and "
                "reslice at load time, or simply call `.contiguous()` on your tensor to pack "
                "it before saving.")
        torch_name = str(v.dtype).split(".")[-1]
        if torch_name not in DTYPE_OF_NAME and torch_name not in UNSUPPORTED_HERE:
            raise KeyError(v.dtype)  # the package's byte-size table has no entry for it
        if v.device.type == "meta":
            raise ValueError(f"Key `{k}` is a tensor on the meta device, which holds no data")
        if v.device.type not in ("cpu", "cuda"):
            raise ValueError(f"Key `{k}`: ufile saves CPU and CUDA tensors, not "
                             f"{v.device.type}")
        nbytes = v.numel() * v.element_size()
        out.append(Entry(k, None, tuple(int(d) for d in v.shape), nbytes,
                         v if nbytes else None))
    _arguments(tensors, metadata)
    for e, v in zip(out, tensors.values()):
        e.dtype = dtype_of(str(v.dtype).split(".")[-1])
    return out


def _storage(t: Any) -> tuple:
    """(storage address, storage bytes) as the package computes them."""
    try:
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    except (AttributeError, NotImplementedError):
        try:
            s = t.storage()
            return s.data_ptr(), s.size() * t.element_size()
        except NotImplementedError:
            return 0, 0


def _end(t: Any) -> int:
    if t.nelement():
        return t.view(-1)[-1].data_ptr() + t.element_size()
    return t.data_ptr()


def shared_tensors(tensors: dict) -> list:
    """Groups of names whose tensors overlap in memory (the package's
    ``_find_shared_tensors``: same device and storage, overlapping byte
    ranges); a group of one is a tensor that shares nothing."""
    import torch
    groups: dict = defaultdict(set)
    for k, v in tensors.items():
        ptr, size = _storage(v)
        if v.device != torch.device("meta") and ptr != 0 and size != 0:
            groups[(v.device, ptr, size)].add(k)
    out: list = []
    for names in sorted(groups.values(), key=lambda s: sorted(map(str, s))):
        if len(names) < 2:
            out.append(names)
            continue
        areas = sorted((tensors[n].data_ptr(), _end(tensors[n]), str(n)) for n in names)
        by_str = {str(n): n for n in names}
        _, last_stop, last = areas[0]
        out.append({by_str[last]})
        for start, stop, name in areas[1:]:
            if start >= last_stop:
                out.append({by_str[name]})
            else:
                out[-1].add(by_str[name])
            last_stop = stop
    return out


def numpy_entries(tensors: Any, metadata: Any = None) -> list[Entry]:
    """Entries of a dict of numpy arrays: a dtype the package does not cover is
    refused; arrays not C-contiguous or not little-endian are converted (copied),
    as the package's ``tobytes`` does."""
    import numpy as np
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, numpy.ndarray] but received "
                         f"{type(tensors)}")
    out = []
    for k, v in tensors.items():
        if not isinstance(v, np.ndarray):
            raise ValueError(f"Key `{k}` is invalid, expected numpy.ndarray but received "
                             f"{type(v)}")
        out.append(Entry(k, None, tuple(int(d) for d in v.shape), v.nbytes, None))
    _arguments(tensors, metadata)
    for e, v in zip(out, tensors.values()):
        e.dtype = dtype_of(v.dtype.name)
        order = v.dtype.byteorder
        if order == ">" or (order == "=" and sys.byteorder == "big"):
            v = v.byteswap().view(v.dtype.newbyteorder("<"))
        if not v.flags.c_contiguous:
            v = np.ascontiguousarray(v)
        e.source = v if e.nbytes else None
    return out
