# SPDX-License-Identifier: Apache-2.0
"""State dicts and rank workers of the collective save tests (importable by
the processes dist_harness spawns). ``full()`` is the model; each scenario
says what rank r of n holds of it and which shard rules it passes."""
from __future__ import annotations

import errno
import os

import numpy as np
import torch

MAX_SHARD = 6000
SMALL_SHARD = 800   # scenarios whose label has "_sharded": several files
TP = {r"q\.weight$": 0, r"o\.weight$": 1, r"up\.weight$": -1, r"deep\.w$": 2}


def full() -> dict:
    rng = np.random.RandomState(11)

    def t(shape, dtype=np.float32):
        return torch.from_numpy(rng.standard_normal(shape).astype(dtype))
    sd = {"embed.weight": t((13, 8))}
    for i in range(3):
        sd[f"layers.{i}.q.weight"] = t((7 + i, 6))          # outer split, uneven
        sd[f"layers.{i}.o.weight"] = t((5, 9 + i))          # inner split, uneven
        sd[f"layers.{i}.up.weight"] = t((4, 3, 5 + i), np.float16)  # last dimension
        sd[f"layers.{i}.norm"] = t((6,))                   # replicated
    sd["layers.deep.w"] = t((2, 3, 7, 2))                   # inner split of a 4-D tensor
    sd["small.q.weight"] = t((2, 4))                        # fewer rows than ranks: empty parts
    sd["step"] = torch.tensor(7, dtype=torch.int64)
    return sd


def _dim(name: str, ndim: int):
    import re
    for pattern, d in TP.items():
        if re.search(pattern, name):
            return d % ndim
    return None


def holding(kind: str, rank: int, n: int) -> tuple[dict, dict | None]:
    """(what rank ``rank`` of ``n`` holds, the shard rules it passes)."""
    sd = full()
    if kind == "replicas":
        return sd, None
    if kind in ("tp", "tp_wrong_rules"):
        out = {}
        for name, t in sd.items():
            d = _dim(name, t.dim())
            out[name] = t if d is None else torch.tensor_split(t, n, d)[rank].contiguous()
        rules = dict(TP)
        if kind == "tp_wrong_rules" and rank == n - 1:
            rules[r"norm$"] = 0
        return out, rules
    if kind == "pipeline":  # rank r holds layers r mod n, everyone the embedding and step
        keep = {k: v for k, v in sd.items()
                if not k.startswith("layers.") or k.startswith(f"layers.{rank % n}.")
                or (k.startswith("layers.deep") and rank == n - 1)
                or (rank == 0 and any(k.startswith(f"layers.{i}.") for i in range(n, 3)))}
        return keep, None
    raise ValueError(kind)


class WrappedIO:
    """The save seam (_save_io.IO) with some of its calls replaced."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)


DIRECT_SHARD = 60000   # several files of the block-straddling state dict


def straddling() -> dict:
    """Tensors of tens of KiB whose parts begin and end inside 4 KiB blocks of
    the file, so that with O_DIRECT each rank writes aligned middles and
    unaligned ends, next to other ranks' ends in the same blocks."""
    rng = np.random.RandomState(12)

    def t(shape, dtype=np.float32):
        return torch.from_numpy(rng.standard_normal(shape).astype(dtype))
    sd = {}
    for i in range(3):
        sd[f"b{i}.q.weight"] = t((1001 + i, 13))            # outer split
        sd[f"b{i}.o.weight"] = t((37, 501 + i))             # inner split
        sd[f"b{i}.norm"] = t((3001 + i,), np.float16)       # replicated
    return sd


class DirectSeen(WrappedIO):
    """Wraps the save seam: records whether each file a rank writes into was
    opened with O_DIRECT."""

    def __init__(self, real):
        super().__init__(real)
        self.direct: list = []

    def open_existing(self, path, direct):
        from fs_support import opened_direct
        f = self.real.open_existing(path, direct)
        self.direct.append(opened_direct(f))
        return f


def worker_direct(rank: int, n: int, root: str) -> str:
    """Rank ``rank``'s parts of straddling(), saved collectively with O_DIRECT;
    "ok", or what was not written through O_DIRECT."""
    import torch.distributed as dist
    from ufile.safetensors import _save_io, save_checkpoint
    parts = {}
    for name, t in straddling().items():
        d = _dim(name, t.dim())
        parts[name] = t if d is None else torch.tensor_split(t, n, d)[rank].contiguous()
    real = _save_io.IO
    _save_io.IO = seen = DirectSeen(real)
    try:
        save_checkpoint(parts, os.path.join(root, "direct"), max_shard_size=DIRECT_SHARD,
                        group=dist.group.WORLD, direct=True,
                        shard={k: TP[k] for k in (r"q\.weight$", r"o\.weight$")})
    finally:
        _save_io.IO = real
    return "ok" if seen.direct and all(seen.direct) else f"files opened O_DIRECT: {seen.direct}"


def expected(kind: str) -> dict:
    """The full state dict the scenario's checkpoint holds."""
    return full()


class SlowIO(WrappedIO):
    """Wraps the save seam: every write takes 50 ms longer."""

    def write(self, *args):
        import time
        time.sleep(0.05)
        return self.real.write(*args)


class FailingIO(WrappedIO):
    """Wraps the save seam: the ``k``-th write fails with ``err``, or exits
    the process (``err`` = "exit")."""

    def __init__(self, real, k: int, err):
        super().__init__(real)
        self.k, self.err, self.n = k, err, 0

    def write(self, *args):
        self.n += 1
        if self.n == self.k:
            if self.err == "exit":
                os._exit(3)
            raise OSError(self.err, os.strerror(self.err))
        return self.real.write(*args)


def worker(rank: int, n: int, root: str, scenarios: list, device: str = "cpu") -> dict:
    """Runs each (label, kind, directory name, faulty rank) scenario in turn,
    the rank's tensors on ``device``; {label: "ok" or "Type: message"}."""
    import torch.distributed as dist
    from ufile.safetensors import _save_dist, _save_io, save_checkpoint
    out = {}
    budget = _save_dist.GATHER_BUDGET
    for label, kind, dname, faulty in scenarios:
        sd, rules = holding(kind, rank, n)
        sd = {k: v.to(device) for k, v in sd.items()}
        _save_dist.GATHER_BUDGET = 1 if label == "small_budget" else budget  # write each at once
        real = _save_io.IO
        if faulty == rank:
            _save_io.IO = FailingIO(real, 1, errno.ENOSPC if label != "exit" else "exit")
        elif "_slow" in label and rank == 0:
            _save_io.IO = SlowIO(real)
        try:
            limit = SMALL_SHARD if "_sharded" in label else MAX_SHARD
            save_checkpoint(sd, os.path.join(root, dname), max_shard_size=limit,
                            group=dist.group.WORLD, shard=rules)
            out[label] = "ok"
        except Exception as exc:  # noqa: BLE001 - the outcome is the result
            out[label] = f"{type(exc).__name__}: {exc}"
        finally:
            _save_io.IO = real
    return out


def cuda_worker(rank: int, n: int, root: str, scenarios: list) -> dict:
    """worker() with the rank's tensors on its GPU. Over NCCL each gathered
    tensor is joined ~25 ms late on the stream: a write that did not wait for
    the joined bytes would write stale ones, every time."""
    from ufile.safetensors import _save_dist
    _save_dist.after_gather = lambda: torch.cuda._sleep(50_000_000)
    try:
        return worker(rank, n, root, scenarios, "cuda")
    finally:
        torch.cuda.synchronize()


CUDA_SCENARIOS = [("replicas", "replicas", "rep", None), ("tp", "tp", "tp", None),
                  ("fault", "tp", "tp", 1)]


def check_cuda_saves(results: list, root: str, want: str) -> None:
    """cuda_worker's CUDA_SCENARIOS: replicas and tensor parallel saved, each
    directory byte-equal to ``want`` (one process's save of full()), and the
    fault on rank 1 raised on every rank."""
    for r, res in enumerate(results):
        assert "ok" in res, f"rank {r}: {res}"
        assert res["ok"]["replicas"] == res["ok"]["tp"] == "ok", res
        assert res["ok"]["fault"].startswith("DistributedSaveError"), res
    for d in ("rep", "tp"):
        got = os.path.join(root, d)
        assert sorted(os.listdir(got)) == sorted(os.listdir(want))
        for f in os.listdir(want):
            assert open(os.path.join(got, f), "rb").read() == \
                open(os.path.join(want, f), "rb").read(), (d, f)
