# SPDX-License-Identifier: Apache-2.0
"""Workers and checks of the collective load into CUDA tensors, shared by the
NCCL suite (test_dist_gpu.py, one process per GPU) and the one-GPU suite
(test_dist_one_gpu.py, several gloo processes on one GPU). Each worker runs
on one rank under dist_harness and loads onto the current GPU."""
from __future__ import annotations

import os
import time

import numpy as np
import torch

import dist_cases as dc
import st_writer

SMALL = 64 << 10   # many chunks and staging reuse even for the small checkpoint
MIB = 1 << 20
BIG_RULES = {r"^down\.": 1}


def write_big(path: str) -> str:
    """A replicated 600 MiB tensor and a 520 MiB row-parallel one, uneven over
    3 and 4 ranks: many broadcast chunks and all-to-alls at default options."""
    rng = np.random.default_rng(5)
    entries = [("rep.weight", "U8", (600 * MIB,)), ("small.norm", "F32", (4099,)),
               ("down.weight", "BF16", (1030, 520 * MIB // 2 // 1030))]
    data = []
    for name, dtype, shape in entries:
        n = int(np.prod(shape)) * (4 if dtype == "F32" else 2 if dtype == "BF16" else 1)
        data.append((name, dtype, shape, rng.integers(0, 256, n, dtype=np.uint8).tobytes()))
    st_writer.write(path, data, {"format": "pt"}, align=8)
    return path


def reference(path: str) -> dict:
    from safetensors.torch import load_file
    files = [path] if path.endswith(".safetensors") else \
        [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".safetensors")]
    out = {}
    for f in files:
        out.update(load_file(f))
    return out


def compare(out: dict, path: str, rules, select, rank: int, n: int) -> dict:
    """{"bad": names whose bytes, shape or GPU differ from the safetensors
    package's (split with torch.tensor_split), "missing": names not loaded}."""
    dev = torch.cuda.current_device()
    ref = reference(path)
    bad = []
    for name, t in out.items():
        want, dim = ref[name], dc.dim_for(rules, name, ref[name].dim())
        if dim is not None:
            want = torch.tensor_split(want, n, dim)[rank]
        if t.device.index != dev or t.shape != want.shape or \
                not torch.equal(t.cpu().reshape(-1).view(torch.uint8),
                                want.contiguous().reshape(-1).view(torch.uint8)):
            bad.append(name)
    names = [k for k in ref if select is None or select(k)]
    return {"bad": bad, "missing": sorted(set(names) - set(out))}


def plain_cost(shapes: list) -> int:
    """Device memory the caching allocator gives the same outputs made by
    torch.empty (its rounding included)."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    held = [torch.empty(s, dtype=d, device="cuda") for s, d in shapes]
    cost = torch.cuda.memory_allocated() - base
    del held
    return cost


def load_worker(rank, n, path, rules, select_kind, options):
    """load_checkpoint on every rank: compare's result and "extra", the peak
    device memory beyond what torch.empty of the same outputs costs."""
    import torch.distributed as dist
    from ufile import safetensors as us

    def experts(name: str) -> bool:
        return ".experts." not in name or name.endswith(f"experts.{rank}.w")
    select = experts if select_kind == "experts" else None
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=rules,
                             select=select, **options)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    res = compare(out, path, rules, select, rank, n)
    shapes = [(t.shape, t.dtype) for t in out.values()]
    del out
    torch.cuda.empty_cache()
    res["extra"] = peak - plain_cost(shapes)
    return res


def slowed_worker(rank, n, path, rules, delays, stream):
    """load_checkpoint, or iter_checkpoint with each tensor kept as yielded,
    with this rank's reads slowed: compare's result."""
    import torch.distributed as dist
    from ufile import safetensors as us
    dc.slow_reads(rank, delays)
    opts = {"group": dist.group.WORLD, "shard": rules, "max_device_bytes": SMALL}
    if stream:
        out = {name: t.clone() for name, t in us.iter_checkpoint(path, device="cuda", **opts)}
    else:
        out = us.load_checkpoint(path, device="cuda", **opts)
    torch.cuda.synchronize()
    return compare(out, path, rules, None, rank, n)


def all_ok(res: list, bound: int | None = None) -> None:
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"]["bad"] == [] and r["ok"]["missing"] == [], (rank, r["ok"])
        if bound is not None:
            assert r["ok"]["extra"] <= bound, (rank, r["ok"]["extra"], bound)


def fence_worker(rank, n, path, fence):
    """The row-parallel tensor with each packing delayed on the GPU, the
    staging fence on or off: compare's result."""
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_exec
    _dist_exec.staging_fence = fence
    _dist_exec.before_pack = lambda: torch.cuda._sleep(50_000_000)  # ~25 ms a packing
    out = us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=BIG_RULES,
                             select=lambda name: name.startswith("down"),
                             max_device_bytes=1 << 24, staging_buffers=2)
    torch.cuda.synchronize()
    return compare(out, path, BIG_RULES, lambda name: name.startswith("down"), rank, n)


def fault_worker(rank, n, path, fault):
    """Rank 1's fourth read fails ("read_error") or its fifth split raises
    ("raise"); every rank returns what DistributedLoadError said."""
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _engine
    if rank == 1 and fault == "read_error":
        real, calls = _engine._read, [0]

        def failing(piece):
            calls[0] += 1
            if calls[0] == 4:
                raise us.SafetensorError(f"reading {piece.what} from {piece.file.path}: "
                                         f"injected I/O error")
            return real(piece)
        _engine._read = failing
    elif rank == 1 and fault == "raise":
        real_split, calls = _engine.split, [0]

        def raising(*a, **k):
            calls[0] += 1
            if calls[0] == 5:
                raise RuntimeError("injected in the pipeline")
            return real_split(*a, **k)
        _engine.split = raising
    t0 = time.monotonic()
    try:
        us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=BIG_RULES)
    except us.DistributedLoadError as exc:
        return {"raised": str(exc), "failures": sorted(exc.failures),
                "s": time.monotonic() - t0}
    return {"loaded": True}
