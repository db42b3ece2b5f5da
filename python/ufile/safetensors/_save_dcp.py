# SPDX-License-Identifier: Apache-2.0
"""``UfileStorageWriter``: a ``torch.distributed.checkpoint`` StorageWriter
(torch 2.x) for ``dcp.save`` that writes an ordinary Hugging Face checkpoint of
the full tensors (the layout of save_checkpoint), each rank writing the chunks
DCP's planner gave it straight from its memory (GPU tensors included) through
ufile, and the coordinator putting the checkpoint in place crash-safe
(_save_commit) in ``finish``.

What loads it: ``load_checkpoint`` (one process or a group), transformers'
``from_pretrained``, and ``dcp.load`` with torch's
``HuggingFaceStorageReader``. Not torch's own ``.distcp`` format: there is no
``.metadata`` file, so ``FileSystemReader`` does not read it.

Steps: the coordinator, in ``prepare_global_plan``, computes the layout from
every rank's write items (global shapes, dtypes, chunks), creates the files
under temporary names with their headers, and gives each rank the file,
offset and shape of each of its chunks; ``write_data`` writes a chunk as
contiguous runs of the row-major tensor (one run for a chunk of whole
trailing rows; a chunk cut along an inner dimension is copied to host memory
and written run by run); ``finish`` renames the files into place, the index
last. DCP itself turns an exception on any rank into a CheckpointException on
every rank. Only tensors are saved: other values of the state dict (bytes
items) are refused. Needs DCP's collectives (``no_dist`` is refused)."""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import torch
from torch.distributed.checkpoint import StorageWriter
from torch.distributed.checkpoint.planner import SavePlan, SavePlanner, WriteItemType
from torch.distributed.checkpoint.storage import WriteResult
from torch.futures import Future

from . import _save_io, _save_shards
from ._save_checkpoint import shard_metadata
from ._save_commit import commit, lock, unlock
from ._save_dist_plan import chunk_runs
from ._save_format import Entry, dtype_of, layout
from ._save_write import WriteOptions, _failure, _mode_for, _remove, temp_name, write_pieces

_SMALL_RUN = 1 << 20  # runs shorter than this are written from a host copy


class UfileStorageWriter(StorageWriter):
    """``dcp.save(state_dict, storage_writer=UfileStorageWriter(path))``.
    ``max_shard_size``, ``metadata`` and ``direct`` as for save_checkpoint."""

    def __init__(self, path: str | os.PathLike, *, max_shard_size: Any = "5GB",
                 metadata: dict | None = None, direct: bool = False) -> None:
        super().__init__()
        self.path = os.path.abspath(os.fspath(path))
        self.max_shard_size = max_shard_size
        self.meta = shard_metadata(metadata)
        self.opts = WriteOptions(direct=direct)
        self.is_coordinator = False
        self._tmps: dict[str, str] = {}
        self._index: dict | None = None
        self._lock: int | None = None

    def reset(self, checkpoint_id: Any = None) -> None:
        """A new save: what a failed previous one left (its temporary files,
        its lock: DCP calls ``finish`` only after success) is released."""
        self._abort()
        if checkpoint_id is not None:
            self.path = os.path.abspath(os.fspath(checkpoint_id))
        self._index = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Any) -> bool:
        return isinstance(checkpoint_id, (str, os.PathLike))

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("use_collectives", True) is False:
            raise ValueError("UfileStorageWriter writes one checkpoint for the whole group: "
                             "dcp.save(no_dist=True) is not supported")
        self.is_coordinator = is_coordinator

    def storage_meta(self) -> Any:
        return None

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                raise ValueError(f"UfileStorageWriter saves tensors only; {item.index.fqn!r} "
                                 f"is not a tensor (save it separately)")
        return plan

    def prepare_global_plan(self, plans: list[SavePlan]) -> list[SavePlan]:
        """Coordinator: the layout, the files (temporary names, headers), and
        each rank's (file, offset, shape) for its items."""
        tensors: dict[str, tuple] = {}
        for plan in plans:
            for item in plan.items:
                td = item.tensor_data
                tensors.setdefault(item.index.fqn, (td.properties.dtype, tuple(td.size)))
        names = list(tensors)
        nbytes = {n: math.prod(s) * _itemsize(dt) for n, (dt, s) in tensors.items()}
        shards = _save_shards.split(names, nbytes.get, lambda n: None,
                                    _save_shards.parse_size(self.max_shard_size)) or [[]]
        files = _save_shards.file_names(len(shards))
        where: dict[str, tuple] = {}
        os.makedirs(self.path, exist_ok=True)
        self._lock = lock(self.path)
        try:
            for fname, keys in zip(files, shards):
                entries = [Entry(k, dtype_of(str(tensors[k][0]).split(".")[-1]),
                                 tensors[k][1], nbytes[k], None) for k in keys]
                head, ordered, total = layout(entries, self.meta)
                tmp = self._create(fname, head, total)
                for e in ordered:
                    where[e.name] = (tmp, fname, len(head) + e.begin, e.shape,
                                     _itemsize(tensors[e.name][0]))
        except BaseException:
            self._abort()
            raise
        if len(files) > 1:
            self._index = {"metadata": {"total_size": sum(nbytes.values())},
                           "weight_map": {k: f for f, ks in zip(files, shards) for k in ks}}
        out = []
        for plan in plans:
            mine = {item.index.fqn: where[item.index.fqn] for item in plan.items}
            out.append(dataclasses.replace(plan, storage_data=mine))
        return out

    def _create(self, fname: str, head: bytes, total: int) -> str:
        io = _save_io.IO
        final = os.path.join(self.path, fname)
        tmp = temp_name(final)
        try:
            f = io.open(tmp, False)
        except OSError as exc:
            raise _failure(exc, final, f"creating {tmp}") from exc
        self._tmps[fname] = tmp
        try:
            os.fchmod(f.fileno(), _mode_for(final))
            io.allocate(f.fileno(), total)
            os.ftruncate(f.fileno(), total)
            write_pieces(f, final, [("writing the header", head, len(head), 0, 0)], self.opts)
            io.fsync(f.fileno())
        except OSError as exc:
            raise _failure(exc, final, "creating the file") from exc
        finally:
            f.close()
        return tmp

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(self._write(plan, planner))
        except BaseException as exc:  # noqa: BLE001 - DCP gathers it from the future
            fut.set_exception(exc)
        return fut

    def _write(self, plan: SavePlan, planner: SavePlanner) -> list:
        where, results = plan.storage_data, []
        by_file: dict[str, list] = {}
        keep = []
        for item in plan.items:
            tmp, fname, offset, shape, itemsize = where[item.index.fqn]
            data = planner.resolve_data(item).detach()
            if not data.is_contiguous():
                data = data.contiguous()
            keep.append(data)
            chunk = item.tensor_data.chunk
            runs = chunk_runs(shape, tuple(chunk.offsets), tuple(chunk.sizes), itemsize)
            if len(runs) > 1 and runs[0][2] < _SMALL_RUN and data.is_cuda:
                data = data.cpu()
                keep.append(data)
            what = f"writing a chunk of tensor {item.index.fqn!r}"
            pieces = by_file.setdefault(fname, [])
            for file_off, src_off, size in runs:
                pieces.append((what, data, size, offset + file_off, src_off))
            results.append(WriteResult(index=item.index, size_in_bytes=sum(r[2] for r in runs),
                                       storage_data=(fname, offset)))
        devices = {d.device for d in keep if d.is_cuda}
        for d in devices:
            torch.cuda.synchronize(d)
        io = _save_io.IO
        for fname, pieces in by_file.items():
            final = os.path.join(self.path, fname)
            f = io.open_existing(where_tmp(where, fname), self.opts.direct)
            try:
                write_pieces(f, final, [p for p in pieces if p[2]], self.opts)
                try:
                    io.fsync(f.fileno())
                except OSError as exc:
                    raise _failure(exc, final, "flushing (fsync)") from exc
            finally:
                f.close()
        return results

    def finish(self, metadata: Any, results: list) -> None:
        """Coordinator: puts the checkpoint in place (the index last)."""
        try:
            commit(self.path, dict(self._tmps), self._index)
            self._tmps = {}
        finally:
            self._abort()

    def _abort(self) -> None:
        for tmp in self._tmps.values():
            _remove(tmp)
        self._tmps = {}
        if self._lock is not None:
            unlock(self._lock)
            self._lock = None


def where_tmp(where: dict, fname: str) -> str:
    return next(v[0] for v in where.values() if v[1] == fname)


def _itemsize(dtype: Any) -> int:
    return torch.empty(0, dtype=dtype).element_size()
