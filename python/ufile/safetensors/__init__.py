# SPDX-License-Identifier: Apache-2.0
"""Loads safetensors checkpoints through ufile; a drop-in for the loading API of
the safetensors package (``safetensors.torch.load_file``, ``safe_open``).

Options (keyword arguments of every loader):
- ``direct``: open files with O_DIRECT (True, default: ufile serves the
  page-cache-resident parts of an O_DIRECT handle from the page cache and the
  rest at the disk's O_DIRECT speed), buffered (False), or per file "auto":
  O_DIRECT unless at least half the file is in the page cache (mincore; about
  50 ms per 4 GB file on the H100 machine, so only for libraries without that).
- ``request_bytes``: bytes per cuFileRead and size of a run of tensors sharing
  one buffer (default 256 MiB; 0: one buffer and request per file).
- ``inflight``: cuFileRead calls in flight over all files (default 8).
- ``max_device_bytes``: None (default) returns views into one buffer per run;
  a number makes every tensor own its storage, read straight into it, so the
  load needs no device memory beyond the tensors (the bound is met for any value).
- ``register_buffers``: cuFileBufRegister each destination for the load.
Lifetimes: a view keeps its run's buffer alive until every view into that run
is gone; use ``max_device_bytes`` when tensors are dropped one by one."""
from __future__ import annotations

import os
from typing import Any, Iterator

from . import _dist, _dist_rules, _frameworks, _loader
from ._dist import DistributedLoadError
from ._dist_mesh import on_mesh
from ._dist_rules import shard_from_tp_plan
from ._format import DTYPES, INDEX, SafetensorError, read_header, read_weight_map
from ._open import SafeSlice, safe_open
from ._save import save, save_file
from ._save_checkpoint import save_checkpoint
from ._save_dist import DistributedSaveError
from ._save_staging import free_save_staging

__all__ = ["SafetensorError", "DistributedLoadError", "safe_open", "SafeSlice", "load_file",
           "load", "load_checkpoint", "iter_checkpoint", "checkpoint_files",
           "shard_from_tp_plan", "load_into", "on_mesh", "load_dtensors",
           "DTYPES", "save_file", "save",
           "save_checkpoint", "DistributedSaveError", "free_save_staging"]


def load_file(filename: str | os.PathLike, device: Any = "cpu", **options: Any
              ) -> dict[str, Any]:
    """All tensors of one file as torch tensors on ``device`` (as
    ``safetensors.torch.load_file``)."""
    return _load([os.fspath(filename)], "pt", device, options)


def load(filename: str | os.PathLike, framework: str = "pt", device: Any = "cpu",
         **options: Any) -> dict[str, Any]:
    """load_file with a framework: "pt" (torch) or "np" (numpy, CPU only)."""
    return _load([os.fspath(filename)], framework, device, options)


def checkpoint_files(path: str | os.PathLike) -> list[str]:
    """The shard files of a checkpoint: a directory (its
    model.safetensors.index.json, else its *.safetensors files), an index file,
    or one .safetensors file. Raises SafetensorError for a shard the index names
    that is missing, or for an index that is not valid."""
    return _checkpoint(os.fspath(path))[0]


def _checkpoint(path: str) -> tuple[list[str], dict[str, str] | None]:
    """(shard files, the index's tensor -> shard path map or None), the index
    read once."""
    if os.path.isdir(path):
        index = os.path.join(path, INDEX)
        if not os.path.exists(index):
            files = sorted(f for f in os.listdir(path) if f.endswith(".safetensors"))
            if not files:
                raise SafetensorError(f"{path}: no *.safetensors file and no index")
            return [os.path.join(path, f) for f in files], None
        path = index
    if not path.endswith(".json"):
        return [path], None
    return _read_index(path)


def _read_index(index: str) -> tuple[list[str], dict[str, str]]:
    wmap = read_weight_map(index)
    base, files, where = os.path.dirname(index), [], {}
    for name, shard in wmap.items():
        full = os.path.join(base, shard)
        where[name] = full
        if full not in files:
            if not os.path.isfile(full):
                what = "is not a regular file" if os.path.exists(full) else "is missing"
                raise SafetensorError(f"{index}: shard {shard} (tensor {name!r}) {what}")
            files.append(full)
    return files, where


def _headers_checked(files: list[str], index_map: dict[str, str] | None) -> list:
    """The files' headers; every tensor in one file only and, with an index,
    in the shard the index names."""
    headers = [read_header(f) for f in files]
    seen: dict[str, str] = {}
    for h in headers:
        for name in h.tensors:
            if name in seen:
                raise SafetensorError(f"tensor {name!r} is in both {seen[name]} and {h.path}")
            seen[name] = h.path
    for name, shard in (index_map or {}).items():
        if name not in seen:
            raise SafetensorError(f"the index names tensor {name!r} in {shard}, "
                                  f"which does not contain it")
        if os.path.normpath(seen[name]) != os.path.normpath(shard):
            raise SafetensorError(f"the index names tensor {name!r} in {shard}, "
                                  f"but it is in {seen[name]}")
    return headers


def _load(files: list[str], framework: str, device: Any, options: dict) -> dict[str, Any]:
    fw = _frameworks.get(framework)
    dev = _frameworks.normalize_device(device)
    headers = _headers_checked(files, None)
    return _loader.load_all(headers, fw, dev, _loader.Options(**options))


def load_checkpoint(path: str | os.PathLike, device: Any = "cpu", framework: str = "pt", *,
                    group: Any = None, shard: _dist_rules.ShardRule = None,
                    select: _dist_rules.Select = None, **options: Any) -> dict[str, Any]:
    """Every tensor of a sharded checkpoint (directory, index file or one file),
    read with one plan over all shards.

    With ``group`` (a torch.distributed process group, e.g.
    ``torch.distributed.group.WORLD``), a collective load: every rank of the
    group calls it with the same checkpoint and receives, as tensors that own
    their storage, the tensors its ``select`` predicate keeps (default: all),
    split by ``shard`` (see docs/DISTRIBUTED.md); each byte is read once, by one
    rank, and fanned out over the group's backend (NCCL for "cuda", gloo for
    "cpu"). Any rank's failure raises DistributedLoadError on every rank."""
    if group is not None:
        return _collect(path, device, framework, group, shard, select, options)
    _no_rules(shard, select, options)
    headers = _checkpoint_headers(path)
    return _loader.load_all(headers, _frameworks.get(framework),
                            _frameworks.normalize_device(device), _loader.Options(**options))


def iter_checkpoint(path: str | os.PathLike, device: Any = "cpu", framework: str = "pt", *,
                    group: Any = None, shard: _dist_rules.ShardRule = None,
                    select: _dist_rules.Select = None, **options: Any
                    ) -> Iterator[tuple[str, Any]]:
    """(name, tensor) over all shards, shard by shard as each one's reads
    complete (every shard's reads are in flight from the start): the shape of
    vLLM's weight iterators. Headers are all checked before the first item.
    With ``group``, the collective load of load_checkpoint, yielding each tensor
    once complete and agreed; iterate to the end on every rank (closing it early
    on one rank makes the others raise DistributedLoadError)."""
    if group is not None:
        return _dist.collective(lambda: _checkpoint_headers(path), framework, device, group,
                                shard, select, options, source=path, stream=True)
    _no_rules(shard, select, options)
    headers = _checkpoint_headers(path)
    fw, dev = _frameworks.get(framework), _frameworks.normalize_device(device)
    return _loader.iterate(headers, fw, dev, _loader.Options(**options))


def load_into(path: str | os.PathLike, targets: Any, *, group: Any = None,
              rename: Any = None, cast: bool = False, strict: bool = True,
              **options: Any) -> list[str]:
    """Loads a checkpoint into tensors that exist: ``targets`` maps checkpoint
    names (after ``rename``, a mapping or a callable returning the target's
    name or None to skip) to a tensor, a DTensor (its local part), or a list
    of ``(destination, destination slices, source slices)`` for fused and
    padded parameters (docs/DISTRIBUTED.md). Bytes are read (or, with
    ``group``, received) straight into the destinations where they are
    contiguous and of the checkpoint's dtype, and widened in place by a
    ``cast`` into contiguous destinations of wider elements; else through a
    temporary of the part's size. Checkpoint tensors no target takes
    are not read; a target no tensor fills raises ValueError when ``strict``.
    With ``group``, a collective load (each byte read once across the group;
    any rank's failure raises DistributedLoadError on every rank). Returns the
    names of the checkpoint tensors loaded, in checkpoint order."""
    from ._load_into import load_into as run
    return run(lambda: _checkpoint_headers(path), targets, group, rename, cast, strict,
               options, source=path)


def load_dtensors(path: str | os.PathLike, device_mesh: Any, placements: Any, *,
                  group: Any = None, **options: Any) -> dict[str, Any]:
    """Every tensor as a DTensor on ``device_mesh`` (torch >= 2.x), placed as
    ``placements`` says (patterns or a callable, to a list of Shard(d) /
    Replicate(), one a mesh dimension; default Replicate()): a collective
    load over ``group`` (default: the world), each byte read once; uneven
    parts as DTensor cuts them (torch.chunk's)."""
    from ._dist_dtensor import load_dtensors as run
    return run(path, device_mesh, placements, group, options)


def _checkpoint_headers(path: str | os.PathLike) -> list:
    files, index_map = _checkpoint(os.fspath(path))
    return _headers_checked(files, index_map)


def _collect(path: str | os.PathLike, device: Any, framework: str, group: Any,
             shard: Any, select: Any, options: dict) -> dict[str, Any]:
    order: list = []
    got = dict(_dist.collective(lambda: _checkpoint_headers(path), framework, device, group,
                                shard, select, options, source=path, order=order))
    return {n: got[n] for n in order if n in got}


def _no_rules(shard: Any, select: Any, options: dict) -> None:
    if shard is not None or select is not None:
        raise ValueError("ufile.safetensors: shard= and select= declare what each rank of "
                         "a group needs: pass group= too")
    if "staging_buffers" in options:
        raise ValueError("ufile.safetensors: staging_buffers= sets a collective load's "
                         "staging (group=)")


def __getattr__(name: str) -> Any:
    """``UfileStorageWriter`` and ``UfileStorageReader`` (torch.distributed.checkpoint's
    StorageWriter and StorageReader, torch 2.x), imported on first use: torch 1.x
    has no DCP."""
    if name == "UfileStorageWriter":
        from ._save_dcp import UfileStorageWriter
        return UfileStorageWriter
    if name == "UfileStorageReader":
        from ._load_dcp import UfileStorageReader
        return UfileStorageReader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
