# SPDX-License-Identifier: Apache-2.0
"""``save_checkpoint``: a state dict saved as a Hugging Face checkpoint
directory (_save_shards: names, shard-size rule, index), every shard written
through ufile under a temporary name and the whole checkpoint put in place by
_save_commit, so the directory holds the previous checkpoint or the new one at
every instant."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from . import _save_shards
from ._save import _options
from ._save_async import COPY_MODES, SaveHandle, capture
from ._save_commit import commit, lock, unlock
from ._save_format import Entry, layout
from ._save_inputs import torch_entries
from ._save_write import WriteOptions, _remove, sync_devices, write_temp


@dataclass
class ShardFile:
    """One file of the checkpoint: its name, header bytes, entries in file
    order (with offsets) and size."""
    name: str
    head: bytes
    entries: list[Entry]
    total: int


def shard_files(entries: dict[str, Entry], layout_of: dict[str, list[str]],
                metadata: dict | None) -> list[ShardFile]:
    out = []
    for name, names in layout_of.items():
        head, ordered, total = layout([entries[n] for n in names], metadata)
        out.append(ShardFile(name, head, ordered, total))
    return out


def shard_metadata(metadata: dict | None) -> dict:
    """Each shard's safetensors metadata: {"format": "pt"} and the caller's."""
    out = {"format": "pt"}
    out.update(metadata or {})
    return out


def prepare(state_dict: Any, max_shard_size: int | str, metadata: dict | None
            ) -> tuple[list[ShardFile], dict | None]:
    """The files of the checkpoint and its index (None for one file); raises
    the safetensors package's refusals for the state dict."""
    meta = shard_metadata(metadata)
    entries = {e.name: e for e in torch_entries(state_dict, meta)}
    layout_of, index = _save_shards.plan(state_dict, max_shard_size)
    return shard_files(entries, layout_of, meta), index


FILES_AT_ONCE = 4   # buffered shard files written side by side


def write_all(directory: str, files: list[ShardFile], opts: WriteOptions) -> dict[str, str]:
    """Writes every file under a temporary name; {final name: temporary path}.
    Buffered, ``FILES_AT_ONCE`` files side by side: a buffered write holds its
    file's lock, so one file at a time is one writer at a time (5.6 GB from
    CPU tensors, 4 shards: 4.0-4.5 s against 6.7-9.1 s, 2-core VM); with
    O_DIRECT one at a time, where side by side was no faster (2.9-3.5 s
    both ways). On failure every temporary file is removed and the first
    failure in file order raised, once every file's writes have returned."""
    tmps: dict[str, str] = {}
    failure: BaseException | None = None
    failed = threading.Event()   # files not yet begun are not begun

    def one(f: ShardFile) -> str | None:
        if failed.is_set():
            return None
        try:
            return write_temp(os.path.join(directory, f.name), f.head, f.entries, f.total, opts)
        except BaseException:
            failed.set()
            raise
    at_once = 1 if opts.direct else min(FILES_AT_ONCE, max(1, len(files)))
    with ThreadPoolExecutor(at_once, thread_name_prefix="ufile-save-file") as pool:
        running = [(f.name, pool.submit(one, f)) for f in files]
        for name, fut in running:
            try:
                tmp = fut.result()
                if tmp is not None:
                    tmps[name] = tmp
            except BaseException as exc:  # noqa: BLE001 - the first in file order is raised
                failed.set()
                failure = failure or exc
    if failure is not None:
        for tmp in tmps.values():
            _remove(tmp)
        raise failure
    return tmps


def save_checkpoint(state_dict: dict[str, Any], directory: str | os.PathLike, *,
                    max_shard_size: int | str = _save_shards.MAX_SHARD_SIZE,
                    metadata: dict[str, str] | None = None, direct: bool = False,
                    blocking: bool = True, copy: bool | str = True, group: Any = None,
                    shard: Any = None, request_bytes: int | None = None,
                    inflight: int | None = None) -> SaveHandle | None:
    """Saves ``state_dict`` (torch tensors, CPU or CUDA) as a checkpoint
    directory that ``transformers``' ``from_pretrained`` and ``load_checkpoint``
    load: ``model.safetensors``, or shards ``model-0000i-of-0000n.safetensors``
    of at most ``max_shard_size`` (huggingface_hub's rule; default "5GB") and
    ``model.safetensors.index.json``. Each shard's metadata is
    ``{"format": "pt"}`` plus ``metadata``. The directory is created if needed.

    Crash-safe: at every instant the directory holds the previous checkpoint
    or the new one, complete (docs/PYTHON.md, "Saving"); a failure raises
    OSError (errno set) naming the file and step, and leaves the previous
    checkpoint. Refusals are the safetensors package's (shared or
    non-contiguous tensors, bad metadata), raised before anything is written.

    ``blocking=True``: returns None once the checkpoint is in place; the
    tensors must not change until then. ``blocking=False``: returns a
    SaveHandle as soon as the tensors are captured (``copy=True`` or "host":
    copied to pinned host memory, so they may change at once; "device": CUDA
    tensors copied on their device, which needs as much free device memory;
    ``copy=False``: the caller keeps them unchanged until ``wait()``); errors
    surface at ``wait()``. One
    save at a time per directory: BlockingIOError while another holds it.

    ``group`` (a torch.distributed process group): a collective save; every
    rank calls it with the same directory and its tensors: replicas, or under
    ``shard`` (the rules of the collective load) its
    ``torch.tensor_split(full, n, dim)[rank]`` parts. The result is the one
    checkpoint of the full tensors, each byte written once, the ranks writing
    in parallel; any rank's failure raises DistributedSaveError on every rank
    (docs/DISTRIBUTED.md, "Collective save")."""
    opts = _options(direct, request_bytes, inflight)
    if not any(copy is m or (isinstance(m, str) and copy == m) for m in COPY_MODES):
        raise ValueError(f"copy must be True, False, 'host' or 'device', not {copy!r}")
    if group is not None:
        if not blocking:
            raise ValueError("ufile.safetensors: blocking=False is not available with group= "
                             "(the save issues collectives, which must not run beside the "
                             "caller's own on the same group)")
        from ._save_dist import save_collective
        save_collective(state_dict, os.path.abspath(os.fspath(directory)), group, shard,
                        max_shard_size, shard_metadata(metadata), opts)
        return None
    if shard is not None:
        raise ValueError("ufile.safetensors: shard= says which parts each rank of a group "
                         "holds: pass group= too")
    files, index = prepare(state_dict, max_shard_size, metadata)
    directory = os.path.abspath(os.fspath(directory))
    os.makedirs(directory, exist_ok=True)
    entries = [e for f in files for e in f.entries]
    fd = lock(directory)
    if blocking:
        try:
            sync_devices(entries)
            commit(directory, write_all(directory, files, opts), index)
        finally:
            unlock(fd)
        return None
    try:
        events, staging_done = capture(entries, copy)
    except BaseException:
        unlock(fd)
        raise

    def job(handle: SaveHandle) -> None:
        try:
            for ev in events:
                ev.synchronize()
            tmps = write_all(directory, files, opts)
            handle.mark("written")
            commit(directory, tmps, index)
            handle.mark("durable")
        finally:
            unlock(fd)
            for e in entries:  # the staging memory goes back now, not with the handle
                e.source = None
            staging_done()
    handle = SaveHandle()
    handle.mark("captured")
    return handle.start(job)
