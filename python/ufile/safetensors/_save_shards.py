# SPDX-License-Identifier: Apache-2.0
"""The Hugging Face checkpoint layout: which tensors go to which shard file,
the file names and the index, by huggingface_hub's rule
(``split_state_dict_into_shards_factory``, as its documentation states it):

- tensors are taken in the state dict's order; a tensor larger than
  ``max_shard_size`` gets a shard of its own (appended at once, ahead of the
  shard being filled); a tensor that would take the current shard past
  ``max_shard_size`` closes it and opens the next;
- a tensor's size is its storage's size, and a tensor sharing its storage with
  an earlier one is not counted, but goes to that tensor's shard;
- one shard: ``model.safetensors`` and no index; n shards:
  ``model-00001-of-0000n.safetensors``..., and ``model.safetensors.index.json``
  = ``{"metadata": {"total_size": bytes}, "weight_map": {tensor: file}}``
  (indent 2, keys sorted, a final newline: what transformers writes);
- each shard's safetensors metadata is ``{"format": "pt"}``.

Sizes: an int (bytes) or a string with a unit, ``"5GB"`` (KB, MB, GB, TB:
powers of 10, as huggingface_hub; KiB, MiB, GiB, TiB: powers of 2)."""
from __future__ import annotations

from typing import Any, Callable

MAX_SHARD_SIZE = 5_000_000_000
FILENAME_PATTERN = "model{suffix}.safetensors"
_UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_size(size: int | str) -> int:
    """Bytes of ``size`` (an int, or "5GB", "500MiB", ...); ValueError otherwise."""
    if isinstance(size, int) and not isinstance(size, bool):
        if size <= 0:
            raise ValueError(f"max_shard_size must be positive, not {size}")
        return size
    if not isinstance(size, str):
        raise TypeError(f"max_shard_size must be an int or a string such as '5GB', "
                        f"not {type(size).__name__}")
    text = size.strip()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.upper().endswith(unit):
            try:
                value = float(text[:-len(unit)].strip())
            except ValueError:
                break
            if value <= 0:
                break
            return int(value * _UNITS[unit])
    raise ValueError(f"max_shard_size {size!r}: not a size (a number of bytes, or a number "
                     f"with a unit: KB, MB, GB, TB, KiB, MiB, GiB, TiB)")


def split(names: list[str], size_of: Callable[[str], int],
          storage_of: Callable[[str], Any], max_shard_size: int) -> list[list[str]]:
    """The shards (lists of names) of huggingface_hub's rule."""
    by_storage: dict = {}
    shards: list[list[str]] = []
    current: list[str] = []
    current_size = 0
    for name in names:
        sid = storage_of(name)
        if sid is not None:
            if sid in by_storage:
                by_storage[sid].append(name)
                continue
            by_storage[sid] = [name]
        size = size_of(name)
        if size > max_shard_size:
            shards.append([name])
            continue
        if current_size + size > max_shard_size:
            shards.append(current)
            current, current_size = [], 0
        current.append(name)
        current_size += size
    if current:
        shards.append(current)
    for keys in by_storage.values():
        for shard in shards:
            if keys[0] in shard:
                shard.extend(keys[1:])
                break
    return shards


def total_size(names: list[str], size_of: Callable[[str], int],
               storage_of: Callable[[str], Any]) -> int:
    """The index's ``total_size``: each storage counted once."""
    seen, total = set(), 0
    for name in names:
        sid = storage_of(name)
        if sid is not None:
            if sid in seen:
                continue
            seen.add(sid)
        total += size_of(name)
    return total


def file_names(count: int, pattern: str = FILENAME_PATTERN) -> list[str]:
    if count <= 1:
        return [pattern.format(suffix="")]
    return [pattern.format(suffix=f"-{i + 1:05d}-of-{count:05d}") for i in range(count)]


def torch_storage(t: Any) -> tuple[Any, int]:
    """(storage id, storage bytes) of a torch tensor, as huggingface_hub
    computes them (the id is None for a tensor without storage)."""
    try:
        s = t.untyped_storage()
        ptr, nbytes = s.data_ptr(), s.nbytes()
    except AttributeError:
        try:
            s = t.storage()
            ptr, nbytes = s.data_ptr(), s.size() * t.element_size()
        except NotImplementedError:
            ptr, nbytes = 0, t.numel() * t.element_size()
    if t.device.type == "meta" or ptr == 0:
        return None, nbytes
    return (t.device, ptr, nbytes), nbytes


def plan(state_dict: dict, max_shard_size: int | str,
         pattern: str = FILENAME_PATTERN) -> tuple[dict[str, list[str]], dict | None]:
    """({file name: tensor names}, the index document or None for one file)."""
    limit = parse_size(max_shard_size)
    names = list(state_dict)
    info = {n: torch_storage(state_dict[n]) for n in names}
    shards = split(names, lambda n: info[n][1], lambda n: info[n][0], limit) or [[]]
    files = file_names(len(shards), pattern)
    layout = dict(zip(files, shards))
    if len(files) == 1:
        return layout, None
    weight_map = {n: f for f, ns in layout.items() for n in ns}
    return layout, {"metadata": {"total_size": total_size(names, lambda n: info[n][1],
                                                          lambda n: info[n][0])},
                    "weight_map": weight_map}
