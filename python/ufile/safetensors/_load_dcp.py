# SPDX-License-Identifier: Apache-2.0
"""``UfileStorageReader``: a ``torch.distributed.checkpoint`` StorageReader
(torch 2.x) for ``dcp.load`` of an ordinary Hugging Face safetensors
checkpoint (one file, a directory, or an index), read through ufile.

The metadata comes from the files' headers: one tensor of the state dict a
checkpoint tensor, by its name, stored as one chunk. DCP's planner turns each
rank's state dict (plain tensors, DTensors on any mesh) into read items; in
``read_data`` every rank hands its items to ``load_into`` with the group as
one collective load, so bytes several ranks need are read once and fanned
out, and each item's bytes land in the view the planner resolved for it
(converted where the state dict's dtype differs from the checkpoint's).
Values that are not tensors have nothing to load from and are refused.
Every rank of the group calls ``read_data`` once per ``dcp.load`` (DCP does);
a failure on any rank raises DistributedLoadError on every rank, which DCP
reports as its CheckpointException."""
from __future__ import annotations

import os
from typing import Any

import torch
from torch.distributed.checkpoint import StorageReader
from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata,
                                                   TensorProperties, TensorStorageMetadata)
from torch.distributed.checkpoint.planner import LoadItemType, LoadPlan, LoadPlanner
from torch.futures import Future

from ._format import DTYPES, SafetensorError


class UfileStorageReader(StorageReader):
    """``dcp.load(state_dict, storage_reader=UfileStorageReader(path))``.
    ``group``: the process group of the load (default: the default group when
    torch.distributed is initialised, else a load in this process alone);
    pass the one given to ``dcp.load(process_group=...)``. Other keyword
    options are load_into's (``max_device_bytes``, ``inflight``, ...)."""

    def __init__(self, path: str | os.PathLike, *, group: Any = None, **options: Any) -> None:
        super().__init__()
        self.path = os.path.abspath(os.fspath(path))
        self.group = group
        self.options = options
        self.is_coordinator = False

    def reset(self, checkpoint_id: Any = None) -> None:
        if checkpoint_id is not None:
            self.path = os.path.abspath(os.fspath(checkpoint_id))

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Any) -> bool:
        return isinstance(checkpoint_id, (str, os.PathLike))

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        from . import _checkpoint_headers
        tensors: dict[str, Any] = {}
        for header in _checkpoint_headers(self.path):
            for name in header.offset_order():
                info = header.tensors[name]
                dtype = getattr(torch, DTYPES[info.dtype][1], None)
                if dtype is None:
                    raise SafetensorError(f"{header.path}, tensor {name!r}: dtype {info.dtype} "
                                          f"has no torch dtype in torch {torch.__version__}")
                size = torch.Size(info.shape)
                tensors[name] = TensorStorageMetadata(
                    properties=TensorProperties(dtype=dtype), size=size,
                    chunks=[ChunkStorageMetadata(offsets=torch.Size([0] * len(size)),
                                                 sizes=size)])
        return Metadata(state_dict_metadata=tensors)

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any,
                              **kwargs: Any) -> None:
        self.is_coordinator = is_coordinator

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        for item in plan.items:
            if item.type != LoadItemType.TENSOR:
                raise ValueError(f"UfileStorageReader loads tensors only; {item.dest_index.fqn!r} "
                                 f"is not a tensor in the state dict")
        return plan

    def prepare_global_plan(self, plans: list[LoadPlan]) -> list[LoadPlan]:
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future:
        fut: Future = Future()
        try:
            self._read(plan, planner)
            fut.set_result(None)
        except BaseException as exc:  # noqa: BLE001 - DCP gathers it from the future
            fut.set_exception(exc)
        return fut

    def _read(self, plan: LoadPlan, planner: LoadPlanner) -> None:
        from . import load_into
        targets: dict[str, list] = {}
        resolved = []
        for item in plan.items:
            dest = planner.resolve_tensor(item).detach()
            source = tuple(slice(o, o + n) for o, n in zip(item.storage_offsets, item.lengths))
            targets.setdefault(item.storage_index.fqn, []).append(
                (dest, (slice(None),) * dest.dim(), source))
            resolved.append((item, dest))
        load_into(self.path, targets, group=self._group(), cast=True, **self.options)
        for item, dest in resolved:
            planner.commit_tensor(item, dest)

    def _group(self) -> Any:
        import torch.distributed as dist
        if self.group is not None:
            return self.group
        return dist.group.WORLD if dist.is_available() and dist.is_initialized() else None
