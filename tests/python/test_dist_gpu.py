# SPDX-License-Identifier: Apache-2.0
"""The collective load over NCCL, one process per GPU (UFILE_TEST_RANKS ranks,
default every GPU; run it with 2 and with 4): every tensor on every rank
byte-equal to the safetensors package's bytes (split with torch.tensor_split)
for replicas, tensor parallel (dimension 0, inner dimensions, uneven) and
subsets; tensors of 512 MiB and more at default options, within the default
device-memory bound; two sub-groups of non-adjacent ranks at once; the staging
fence (a delayed packing must not see its staging overwritten); outputs cut
from one reserved segment of torch's allocator; a read error
and an exception mid-pipeline on one rank make every rank raise; each process
holds one CUDA context, on its own GPU."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
import torch

import dist_cases as dc
import dist_harness
import st_writer
from fs_support import module_dir

RANKS = int(os.environ.get("UFILE_TEST_RANKS", torch.cuda.device_count()))
if torch.cuda.device_count() < max(2, RANKS):  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs {max(2, RANKS)} GPUs, torch sees {torch.cuda.device_count()}")

SMALL = 64 << 10   # many chunks and staging reuse even for the small checkpoint
MIB = 1 << 20


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "distgpu") as root:
        path = os.path.join(root, "ckpt")
        dc.write_checkpoint(path)
        yield path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A replicated 600 MiB tensor and a 520 MiB row-parallel one, uneven over
    3 and 4 ranks: many broadcast chunks and all-to-alls at default options."""
    with module_dir(tmp_path_factory, "distgpu-big") as root:
        yield _write_big(os.path.join(root, "big.safetensors"))


def _write_big(path: str) -> str:
    rng = np.random.default_rng(5)
    entries = [("rep.weight", "U8", (600 * MIB,)), ("small.norm", "F32", (4099,)),
               ("down.weight", "BF16", (1030, 520 * MIB // 2 // 1030))]
    data = []
    for name, dtype, shape in entries:
        n = int(np.prod(shape)) * (4 if dtype == "F32" else 2 if dtype == "BF16" else 1)
        data.append((name, dtype, shape, rng.integers(0, 256, n, dtype=np.uint8).tobytes()))
    st_writer.write(path, data, {"format": "pt"}, align=8)
    return path


BIG_RULES = {r"^down\.": 1}


def _reference(path: str) -> dict:
    from safetensors.torch import load_file
    files = [path] if path.endswith(".safetensors") else \
        [os.path.join(path, f) for f in sorted(os.listdir(path)) if f.endswith(".safetensors")]
    out = {}
    for f in files:
        out.update(load_file(f))
    return out


def _compare(out: dict, path: str, rules, select, rank: int, n: int) -> dict:
    dev = torch.cuda.current_device()
    ref = _reference(path)
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


def _plain_cost(shapes: list) -> int:
    """Device memory the caching allocator gives the same outputs made by
    torch.empty (its rounding included)."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    held = [torch.empty(s, dtype=d, device="cuda") for s, d in shapes]
    cost = torch.cuda.memory_allocated() - base
    del held
    return cost


def _worker(rank, n, path, rules, select_kind, options):
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
    res = _compare(out, path, rules, select, rank, n)
    shapes = [(t.shape, t.dtype) for t in out.values()]
    del out
    torch.cuda.empty_cache()
    res["extra"] = peak - _plain_cost(shapes)
    return res


def _all_ok(res: list, bound: int | None = None) -> None:
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"]["bad"] == [] and r["ok"]["missing"] == [], (rank, r["ok"])
        if bound is not None:
            assert r["ok"]["extra"] <= bound, (rank, r["ok"]["extra"], bound)


@pytest.mark.parametrize("rules,select,depth", [(None, None, 2), (dc.SHARD_RULES, None, 2),
                                                (dc.SHARD_RULES, "experts", 2),
                                                (dc.SHARD_RULES, None, 5)])
def test_every_tensor_equals_safetensors(ckpt, rules, select, depth):
    opts = {"max_device_bytes": SMALL, "staging_buffers": depth}
    res = dist_harness.run(_worker, RANKS, (ckpt, rules, select, opts), backend="nccl",
                           deadline=300, pg_timeout=120)
    _all_ok(res, SMALL)


@pytest.mark.parametrize("ranks", sorted({2, 3, RANKS}))
def test_large_tensors_at_default_options_within_the_memory_bound(big, ranks):
    from ufile.safetensors import _dist
    if ranks > RANKS:
        pytest.skip(f"{ranks} ranks need {ranks} GPUs; UFILE_TEST_RANKS is {RANKS}")
    res = dist_harness.run(_worker, ranks, (big, BIG_RULES, None, {}), backend="nccl",
                           deadline=600, pg_timeout=300)
    _all_ok(res, _dist.DEFAULT_MAX_DEVICE_BYTES)


def _segments_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    out = us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=BIG_RULES)
    segments = [(s["address"], s["address"] + s["total_size"])
                for s in torch.cuda.memory_snapshot()]
    large = [t for t in out.values() if t.numel() * t.element_size() >= MIB]
    holding = {i for t in large for i, (a, b) in enumerate(segments) if a <= t.data_ptr() < b}
    return len(large), len(holding), len({t.untyped_storage().data_ptr() for t in large})


def test_outputs_are_cut_from_one_reserved_segment(big):
    """The outputs' memory is reserved with one allocation (one cudaMalloc,
    not one per tensor): every large output lies in one segment of torch's
    allocator, each in a storage of its own."""
    for rank, r in enumerate(dist_harness.run(_segments_worker, 2, (big,), backend="nccl",
                                              deadline=300, pg_timeout=120)):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        large, segments, storages = r["ok"]
        assert large >= 2 and segments == 1 and storages == large, (rank, r["ok"])


def _subgroup_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    out = us.load_checkpoint(path, device="cuda", group=groups[rank % 2],
                             shard=dc.SHARD_RULES, max_device_bytes=SMALL)
    return _compare(out, path, dc.SHARD_RULES, None, rank // 2, 2)


def test_two_subgroups_of_non_adjacent_ranks_at_once(ckpt):
    if RANKS < 4:
        pytest.skip(f"sub-groups [0, 2] and [1, 3] need 4 GPUs; UFILE_TEST_RANKS is {RANKS}")
    _all_ok(dist_harness.run(_subgroup_worker, 4, (ckpt,), backend="nccl", deadline=300))


def _fence_worker(rank, n, path, fence):
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_exec
    _dist_exec.staging_fence = fence
    _dist_exec.before_pack = lambda: torch.cuda._sleep(50_000_000)  # ~25 ms a packing
    out = us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=BIG_RULES,
                             select=lambda name: name.startswith("down"),
                             max_device_bytes=1 << 24, staging_buffers=2)
    torch.cuda.synchronize()
    return _compare(out, path, BIG_RULES, lambda name: name.startswith("down"), rank, n)


def test_the_staging_fence_holds_a_delayed_packing(big):
    """Each packing is delayed on the GPU; without the fence the next read
    into the same staging overwrites rows not yet packed (shown below)."""
    res = dist_harness.run(_fence_worker, 2, (big, True), backend="nccl", deadline=600)
    _all_ok(res)
    res = dist_harness.run(_fence_worker, 2, (big, False), backend="nccl", deadline=600)
    assert any(r.get("ok", {}).get("bad") for r in res), \
        "with the fence off the delayed packing saw no overwritten staging: the test " \
        "cannot catch the fence's removal"


def _fault_worker(rank, n, path, fault):
    import time
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


@pytest.mark.parametrize("fault,words", [("read_error", ["injected I/O error", "big.safetensors"]),
                                         ("raise", ["injected in the pipeline", "tensor '"])])
def test_one_rank_fails_every_rank_raises(big, fault, words):
    res = dist_harness.run(_fault_worker, RANKS, (big, fault), backend="nccl", deadline=300,
                           pg_timeout=120)
    for rank, r in enumerate(res):
        assert "ok" in r and "raised" in r["ok"], (rank, r)
        assert r["ok"]["failures"] == [1], (rank, r["ok"])
        for w in ["rank 1"] + words:
            assert w in r["ok"]["raised"], (w, r["ok"]["raised"])


def _context_worker(rank, n, path):
    """Which GPUs hold an active primary context in this process (asked of the
    driver from inside, so PID namespaces do not matter)."""
    import torch.distributed as dist
    from ufile import safetensors as us
    us.load_checkpoint(path, device="cuda", group=dist.group.WORLD)
    torch.cuda.synchronize()
    cuda = ctypes.CDLL("libcuda.so.1")
    count = ctypes.c_int()
    assert cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
    active = []
    for i in range(count.value):
        dev, flags, on = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
        assert cuda.cuDeviceGet(ctypes.byref(dev), i) == 0
        assert cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(on)) == 0
        if on.value:
            active.append(i)
    return {"active": active, "mine": torch.cuda.current_device()}


def test_one_context_per_process(ckpt):
    res = dist_harness.run(_context_worker, RANKS, (ckpt,), backend="nccl", deadline=300)
    for rank, r in enumerate(res):
        assert "ok" in r, r
        assert r["ok"]["active"] == [r["ok"]["mine"]], (rank, r["ok"])
