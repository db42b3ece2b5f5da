# SPDX-License-Identifier: Apache-2.0
"""The torch.distributed.checkpoint names ufile's StorageWriter and
StorageReader import, stood in by classes with the same fields where torch
has no DCP (torch 1.x), so that CPU tests can drive them as dcp.save and
dcp.load do. ``install()`` does nothing where torch has DCP."""
from __future__ import annotations

import dataclasses
import enum
import importlib
import sys
import types

import torch


class StorageWriter:  # the abstract bases: nothing the writer or reader calls
    def __init__(self) -> None:
        pass


class StorageReader:
    def __init__(self) -> None:
        pass


class WriteItemType(enum.Enum):
    TENSOR = 0
    SHARD = 1
    BYTE_IO = 2


class LoadItemType(enum.Enum):
    TENSOR = 0
    BYTE_IO = 1


@dataclasses.dataclass(frozen=True)
class SavePlan:
    items: list
    storage_data: object = None
    planner_data: object = None


@dataclasses.dataclass(frozen=True)
class LoadPlan:
    items: list
    storage_data: object = None
    planner_data: object = None


@dataclasses.dataclass
class WriteResult:
    index: object
    size_in_bytes: int
    storage_data: object


@dataclasses.dataclass
class TensorProperties:
    dtype: torch.dtype


@dataclasses.dataclass
class ChunkStorageMetadata:
    offsets: torch.Size
    sizes: torch.Size


@dataclasses.dataclass
class TensorStorageMetadata:
    properties: TensorProperties
    size: torch.Size
    chunks: list


@dataclasses.dataclass
class Metadata:
    state_dict_metadata: dict
    planner_data: object = None
    storage_data: object = None


def install() -> None:
    try:
        importlib.import_module("torch.distributed.checkpoint")
        return
    except ImportError:
        pass
    root = "torch.distributed.checkpoint"
    names = {root: (StorageWriter, StorageReader),
             f"{root}.planner": (SavePlan, LoadPlan, WriteItemType, LoadItemType),
             f"{root}.storage": (WriteResult,),
             f"{root}.metadata": (TensorProperties, ChunkStorageMetadata,
                                  TensorStorageMetadata, Metadata)}
    for name, members in names.items():
        mod = types.ModuleType(name)
        for m in members:
            setattr(mod, m.__name__, m)
        sys.modules[name] = mod
    sys.modules[f"{root}.planner"].SavePlanner = object
    sys.modules[f"{root}.planner"].LoadPlanner = object
