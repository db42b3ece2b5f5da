# SPDX-License-Identifier: Apache-2.0
"""The collective load's CUDA path on one GPU: 2-4 gloo processes, every one
on the same GPU (NCCL refuses two ranks on one device; gloo moves CUDA
tensors). The device staging and scratch, the side, status and landed
streams and the bookkeeping of what is complete run as over NCCL, so a
machine with one GPU checks them: every tensor byte-equal to the safetensors
package's for replicas, tensor parallel and subsets, and for tensors of 512
MiB and more; reads slowed unevenly with a status after every collective
(load_checkpoint and iter_checkpoint); rows shared in part into staged CUDA
destinations; packings delayed on the GPU; a read error and an exception
mid-pipeline on one rank; a consumer raising at a yield; two hosts, with
copies of their own or one lacking the files; DTensors on a 1-D and the
2 x 2 mesh. gloo completes collectives out of issue order, each on a stream
of its own, where NCCL completes them in order, so what the executor must
order itself is checked here. Not here: the staging fence's removal (the
host waits for each gloo reduce-scatter) and the device-memory bound (gloo
allocates device temporaries of its own, about twice each collective's
bytes); the NCCL suite, test_dist_gpu.py, checks both."""
from __future__ import annotations

import math
import os
import shutil

import pytest

import dist_cases as dc
import dist_gpu_cases as gc
import dist_harness
import dist_stream_cases as sc
import load_into_cases as lc
from fs_support import module_dir

DEADLINE = 300
DIM0 = {r"\.q\.weight$": 0, r"^embed": 0, r"^big$": 0, r"lm_head": 0}


def _run(worker, ranks: int, args: tuple) -> list:
    return dist_harness.run(worker, ranks, args, backend="gloo", deadline=DEADLINE,
                            pg_timeout=120)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "dist1gpu") as root:
        path = os.path.join(root, "ckpt")
        yield path, dc.write_checkpoint(path)


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    with module_dir(tmp_path_factory, "dist1gpu-kinds") as root:
        yield root, dc.write_three_kinds(root, (1024, 1024), 7)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    with module_dir(tmp_path_factory, "dist1gpu-big") as root:
        yield gc.write_big(os.path.join(root, "big.safetensors"))


@pytest.mark.parametrize("ranks", [2, 3, 4])
@pytest.mark.parametrize("rules,select,depth", [(None, None, 2), (DIM0, None, 2),
                                                (dc.SHARD_RULES, None, 2),
                                                (dc.SHARD_RULES, "experts", 5)])
def test_every_tensor_equals_safetensors(ckpt, ranks, rules, select, depth):
    opts = {"max_device_bytes": gc.SMALL, "staging_buffers": depth}
    gc.all_ok(_run(gc.load_worker, ranks, (ckpt[0], rules, select, opts)))


@pytest.mark.parametrize("rules", [None, gc.BIG_RULES])
def test_large_tensors_at_default_options(big, rules):
    gc.all_ok(_run(gc.load_worker, 2, (big, rules, None, {})))


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("rules", [DIM0, dc.SHARD_RULES])
def test_reads_slowed_unevenly(ckpt, rules, stream):
    gc.all_ok(_run(gc.slowed_worker, 3, (ckpt[0], rules, [0.0, 0.03, 0.01], stream)))


@pytest.mark.parametrize("ranks,seed", [(2, 1), (3, 2)])
@pytest.mark.parametrize("cast", [False, True])
def test_rows_shared_in_part_into_staged_cuda_destinations(ckpt, ranks, seed, cast):
    """A part read partly by its own rank alone and partly shared is copied to
    its strided or float64 destination only once both are in."""
    path, arrays = ckpt
    wants = lc.random_rows(arrays, ("embed.weight", "layers.0.q.weight", "lm_head.weight"),
                           ranks, seed)
    res = _run(lc.overlap_worker, ranks, (path, wants, cast, [0.0, 0.05, 0.1][:ranks], "cuda"))
    lc.check_overlap(res, arrays, wants, cast)


def test_a_delayed_packing_is_exact(big):
    """Each packing delayed on the GPU. Over gloo the host waits for each
    reduce-scatter (an all-reduce of a copy of the packed run), so the fence
    is not what keeps the staging here: the NCCL suite shows its removal
    caught."""
    gc.all_ok(_run(gc.fence_worker, 2, (big, True)))


@pytest.mark.parametrize("fault,words", [("read_error", ["injected I/O error", "big.safetensors"]),
                                         ("raise", ["injected in the pipeline", "tensor '"])])
def test_one_rank_fails_every_rank_raises(big, fault, words):
    for rank, r in enumerate(_run(gc.fault_worker, 3, (big, fault))):
        assert "ok" in r and "raised" in r["ok"], (rank, r)
        assert r["ok"]["failures"] == [1], (rank, r["ok"])
        for w in ["rank 1"] + words:
            assert w in r["ok"]["raised"], (w, r["ok"]["raised"])


def test_a_consumer_raising_at_a_yield_makes_every_rank_raise(kinds):
    sc.check_consumer_raised(_run(sc.stream_worker, 3, (kinds[0], 1)))


@pytest.mark.parametrize("own_copy", [True, False])
def test_two_hosts(kinds, tmp_path, own_copy):
    """4 ranks as two hosts: each with its own copy (each host reads each
    byte once), or host 1's path missing (host 0 reads what host 1 keeps
    into the staged broadcasts' ring; host 1 reads nothing)."""
    path, arrays = kinds
    other = str(tmp_path / "copy")
    if own_copy:
        shutil.copytree(path, other)
    sc.check_hosts(_run(sc.hosts_worker, 4, ((path, other),)), arrays,
                   None if own_copy else 1)


@pytest.mark.parametrize("mesh_shape,split_on", [((2,), 0), ((2, 2), 0), ((2, 2), 1)])
@pytest.mark.parametrize("mode", ["out", "into"])
def test_dtensors_equal_distribute_tensor(ckpt, mesh_shape, split_on, mode):
    """DTensor outputs and targets on a 1-D mesh and the 2 x 2 mesh (data
    parallel x tensor parallel, each way round), every rank on this GPU:
    placements and local parts. Not the full tensors: torch's full_tensor()
    dies (SIGSEGV in torch._library) in a process forked from the harness's
    fork server; the NCCL suite, whose processes are spawned, gathers them."""
    pytest.importorskip("torch.distributed.tensor")
    import dtensor_cases
    for rank, r in enumerate(_run(dtensor_cases.dtensor_worker, math.prod(mesh_shape),
                                  (ckpt[0], mesh_shape, split_on, mode, False))):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"] == [], (rank, r["ok"])
