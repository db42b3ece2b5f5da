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

import pytest
import torch

import dist_cases as dc
import dist_gpu_cases as gc
import dist_harness
from fs_support import module_dir

RANKS = int(os.environ.get("UFILE_TEST_RANKS", torch.cuda.device_count()))
if torch.cuda.device_count() < max(2, RANKS):  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs {max(2, RANKS)} GPUs, torch sees {torch.cuda.device_count()}")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "distgpu") as root:
        path = os.path.join(root, "ckpt")
        dc.write_checkpoint(path)
        yield path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    with module_dir(tmp_path_factory, "distgpu-big") as root:
        yield gc.write_big(os.path.join(root, "big.safetensors"))


@pytest.mark.parametrize("rules,select,depth", [(None, None, 2), (dc.SHARD_RULES, None, 2),
                                                (dc.SHARD_RULES, "experts", 2),
                                                (dc.SHARD_RULES, None, 5)])
def test_every_tensor_equals_safetensors(ckpt, rules, select, depth):
    opts = {"max_device_bytes": gc.SMALL, "staging_buffers": depth}
    res = dist_harness.run(gc.load_worker, RANKS, (ckpt, rules, select, opts), backend="nccl",
                           deadline=300, pg_timeout=120)
    gc.all_ok(res, gc.SMALL)


@pytest.mark.parametrize("ranks", sorted({2, 3, RANKS}))
def test_large_tensors_at_default_options_within_the_memory_bound(big, ranks):
    from ufile.safetensors import _dist
    if ranks > RANKS:
        pytest.skip(f"{ranks} ranks need {ranks} GPUs; UFILE_TEST_RANKS is {RANKS}")
    res = dist_harness.run(gc.load_worker, ranks, (big, gc.BIG_RULES, None, {}), backend="nccl",
                           deadline=600, pg_timeout=300)
    gc.all_ok(res, _dist.DEFAULT_MAX_DEVICE_BYTES)


def _segments_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    out = us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=gc.BIG_RULES)
    segments = [(s["address"], s["address"] + s["total_size"])
                for s in torch.cuda.memory_snapshot()]
    large = [t for t in out.values() if t.numel() * t.element_size() >= gc.MIB]
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
                             shard=dc.SHARD_RULES, max_device_bytes=gc.SMALL)
    return gc.compare(out, path, dc.SHARD_RULES, None, rank // 2, 2)


def test_two_subgroups_of_non_adjacent_ranks_at_once(ckpt):
    if RANKS < 4:
        pytest.skip(f"sub-groups [0, 2] and [1, 3] need 4 GPUs; UFILE_TEST_RANKS is {RANKS}")
    gc.all_ok(dist_harness.run(_subgroup_worker, 4, (ckpt,), backend="nccl", deadline=300))


def test_the_staging_fence_holds_a_delayed_packing(big):
    """Each packing is delayed on the GPU; without the fence the next read
    into the same staging overwrites rows not yet packed (shown below)."""
    res = dist_harness.run(gc.fence_worker, 2, (big, True), backend="nccl", deadline=600)
    gc.all_ok(res)
    res = dist_harness.run(gc.fence_worker, 2, (big, False), backend="nccl", deadline=600)
    assert any(r.get("ok", {}).get("bad") for r in res), \
        "with the fence off the delayed packing saw no overwritten staging: the test " \
        "cannot catch the fence's removal"


@pytest.mark.parametrize("fault,words", [("read_error", ["injected I/O error", "big.safetensors"]),
                                         ("raise", ["injected in the pipeline", "tensor '"])])
def test_one_rank_fails_every_rank_raises(big, fault, words):
    res = dist_harness.run(gc.fault_worker, RANKS, (big, fault), backend="nccl", deadline=300,
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
