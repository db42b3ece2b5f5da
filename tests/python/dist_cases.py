# SPDX-License-Identifier: Apache-2.0
"""Checkpoints and expectations shared by the collective-load tests (CPU over
gloo, GPU over NCCL): a sharded checkpoint written by the independent writer,
rank workers that load it and compare every tensor (or part) with the bytes
written, and the faults a worker can inject into its own rank."""
from __future__ import annotations

import contextlib
import json
import os

import numpy as np

import st_writer

RNG_SEED = 11


def tensor_table() -> list:
    """(shard index, name, dtype, shape): every shape class the planner
    distinguishes (0-d, empty, dim-0 and inner splits, uneven, tiny)."""
    return [
        (0, "embed.weight", "F32", (37, 8)),
        (0, "layers.0.norm", "F16", (8,)),
        (0, "layers.0.q.weight", "F32", (10, 8)),
        (0, "layers.0.o.weight", "F32", (8, 10)),
        (1, "layers.0.experts.0.w", "I32", (6, 5)),
        (1, "layers.0.experts.1.w", "I32", (6, 5)),
        (1, "layers.0.experts.2.w", "I32", (6, 5)),
        (1, "layers.0.experts.3.w", "I32", (6, 5)),
        (1, "scalar", "F64", ()),
        (1, "empty", "F32", (0, 4)),
        (2, "cube", "I16", (3, 7, 5)),
        (2, "odd.bytes", "U8", (3,)),
        (2, "big", "U8", (300, 257)),
        (3, "lm_head.weight", "F32", (37, 8)),
    ]


NP = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "F64": np.float64,
      "I16": np.int16, "U8": np.uint8}


def write_checkpoint(dirname: str, shards: int = 4) -> dict:
    """Writes the table as ``shards`` files plus an index; returns name -> array."""
    rng = np.random.default_rng(RNG_SEED)
    os.makedirs(dirname, exist_ok=True)
    arrays, per_file, wmap = {}, [[] for _ in range(shards)], {}
    for shard, name, dtype, shape in tensor_table():
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(NP[dtype]).itemsize
        raw = rng.integers(0, 256, n, dtype=np.uint8)
        arrays[name] = raw.view(NP[dtype]).reshape(shape)
        f = shard % shards
        per_file[f].append((name, dtype, shape, raw.tobytes()))
        wmap[name] = f"model-{f + 1:05d}-of-{shards:05d}.safetensors"
    for f, entries in enumerate(per_file):
        st_writer.write(os.path.join(dirname, f"model-{f + 1:05d}-of-{shards:05d}.safetensors"),
                        entries, {"format": "pt"}, align=1)
    with open(os.path.join(dirname, "model.safetensors.index.json"), "w") as fh:
        json.dump({"metadata": {}, "weight_map": wmap}, fh)
    return arrays


SHARD_RULES = {r"\.q\.weight$": 0, r"\.o\.weight$": 1, r"^embed": 0, r"^cube$": 1,
               r"^big$": -1, r"lm_head": 0}


def write_three_kinds(dirname: str, shape: tuple, seed: int) -> dict:
    """48 random int32 tensors of ``shape`` in 3 files, named ``whole.F.I``,
    ``col.F.I`` and ``row.F.I`` in turn (for rules that keep, split along
    dimension 0, split along dimension 1); returns {name: array}."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for f in range(3):
        entries = []
        for i in range(16):
            name = f"{('whole', 'col', 'row')[i % 3]}.{f}.{i}"
            a = rng.integers(0, 1 << 30, shape, dtype=np.int32)
            arrays[name] = a
            entries.append((name, "I32", a.shape, a.tobytes()))
        st_writer.write(os.path.join(dirname, f"model-{f + 1:05d}-of-00003.safetensors"),
                        entries, {"format": "pt"})
    return arrays


def expected(arrays: dict, name: str, dim, rank: int, ranks: int) -> np.ndarray:
    a = arrays[name]
    if dim is None:
        return a
    return np.array_split(a, ranks, axis=dim)[rank]


def compare(out: dict, arrays: dict, dims: dict, names: list, rank: int, ranks: int) -> str:
    """"ok" or what differs."""
    if sorted(out) != sorted(names):
        return f"names differ: got {sorted(out)}, want {sorted(names)}"
    for name in names:
        t = out[name].cpu()
        want = expected(arrays, name, dims.get(name), rank, ranks)
        if tuple(t.shape) != want.shape:
            return f"{name}: shape {tuple(t.shape)}, want {want.shape}"
        got = t.contiguous().reshape(-1).view(__import__("torch").uint8).numpy().tobytes()
        if got != np.ascontiguousarray(want).tobytes():
            return f"{name}: bytes differ"
        if t.is_contiguous() is False or t.storage_offset() != 0:
            return f"{name}: not a tensor owning its storage"
    return "ok"


def dim_for(rules: dict | None, name: str, ndim: int):
    """The dimension the first matching rule splits ``name`` along, or None."""
    import re
    for pat, d in (rules or {}).items():
        if re.search(pat, name):
            return d % ndim
    return None


def dims_of(arrays: dict, rules: dict | None) -> dict:
    import re
    out = {}
    for name, a in arrays.items():
        out[name] = None
        for pat, d in (rules or {}).items():
            if re.search(pat, name):
                out[name] = d % a.ndim
                break
    return out


@contextlib.contextmanager
def observed(owner: object, name: str, note):
    """Within it, each call of ``owner.name`` (a function, or a method of a
    class) first calls ``note`` with its arguments; put back after."""
    real = getattr(owner, name)

    def wrapper(*a, **k):
        note(*a, **k)
        return real(*a, **k)
    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, real)


@contextlib.contextmanager
def recorded_reads():
    """Within it, every piece ufile's engine reads in this process is appended
    to the list it yields (a piece has ``file``, ``file_offset`` and
    ``size``); the engine's own read is put back after."""
    from ufile.safetensors import _engine
    pieces: list = []
    with observed(_engine, "_read", pieces.append):
        yield pieces


def slow_reads(rank: int, delays: list) -> None:
    """Each of this rank's reads takes ``delays[rank]`` seconds longer, and a
    status is agreed after every collective: a part taken as complete before
    its reads end is caught."""
    import time
    from ufile.safetensors import _dist_exec, _engine
    real = _engine._read

    def slow(piece):
        time.sleep(delays[rank])
        return real(piece)
    _engine._read = slow
    _dist_exec.AGREE_EVERY = 1
