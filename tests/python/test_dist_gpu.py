# SPDX-License-Identifier: Apache-2.0
"""The collective load over NCCL, one process per GPU (UFILE_TEST_RANKS ranks,
default every GPU): every tensor on every rank byte-equal to the safetensors
package's bytes (split with torch.tensor_split) for replicas, tensor parallel
(dimension 0, inner dimensions, uneven) and subsets; the extra device memory of
each rank stays within max_device_bytes + 10 %; each process holds one CUDA
context, on its own GPU."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest
import torch

import dist_cases as dc
import dist_harness

RANKS = int(os.environ.get("UFILE_TEST_RANKS", torch.cuda.device_count()))
if torch.cuda.device_count() < max(2, RANKS):  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs {max(2, RANKS)} GPUs, torch sees {torch.cuda.device_count()}")

MAX_DEVICE = 8 * 4096 * RANKS  # several rounds even for the small checkpoint


@pytest.fixture(scope="module")
def ckpt():
    base = os.environ.get("UFILE_TEST_TMPDIR") or None
    if base:
        os.makedirs(base, exist_ok=True)
    root = tempfile.mkdtemp(dir=base, prefix="distgpu-")
    path = os.path.join(root, "ckpt")
    dc.write_checkpoint(path)
    yield path
    shutil.rmtree(root, ignore_errors=True)


def _reference(path: str) -> dict:
    from safetensors.torch import load_file
    out = {}
    for f in sorted(os.listdir(path)):
        if f.endswith(".safetensors"):
            out.update(load_file(os.path.join(path, f)))
    return out


def _worker(rank, n, path, rules, select_kind, max_device, depth=2):
    import torch.distributed as dist
    from ufile import safetensors as us
    dev = torch.cuda.current_device()
    def experts(name: str) -> bool:
        return ".experts." not in name or name.endswith(f"experts.{rank}.w")
    select = experts if select_kind == "experts" else None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = us.load_checkpoint(path, device="cuda", group=dist.group.WORLD, shard=rules,
                             select=select, max_device_bytes=max_device, staging_buffers=depth)
    torch.cuda.synchronize()
    tensors = sum(t.untyped_storage().nbytes() for t in out.values())
    extra = torch.cuda.max_memory_allocated() - base - tensors
    ref = _reference(path)
    dims = dc.dims_of({k: v.numpy() for k, v in ref.items()}, rules)
    bad = []
    for name, t in out.items():
        want, dim = ref[name], dims[name]
        if dim is not None:
            want = torch.tensor_split(want, n, dim)[rank]
        if t.device.index != dev or t.shape != want.shape or \
                not torch.equal(t.cpu().reshape(-1).view(torch.uint8),
                                want.contiguous().reshape(-1).view(torch.uint8)):
            bad.append(name)
    names = [k for k in ref if select is None or select(k)]
    return {"bad": bad, "missing": sorted(set(names) - set(out)), "extra": extra,
            "pid": os.getpid(), "device": dev}


@pytest.mark.parametrize("rules,select,depth", [(None, None, 2), (dc.SHARD_RULES, None, 2),
                                                (dc.SHARD_RULES, "experts", 2),
                                                (dc.SHARD_RULES, None, 4)])
def test_every_tensor_equals_safetensors(ckpt, rules, select, depth):
    res = dist_harness.run(_worker, RANKS, (ckpt, rules, select, MAX_DEVICE, depth),
                           backend="nccl", deadline=300, pg_timeout=120)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"]["bad"] == [] and r["ok"]["missing"] == [], (rank, r["ok"])
        assert r["ok"]["extra"] <= 1.1 * MAX_DEVICE, (rank, r["ok"]["extra"])


def _context_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    us.load_checkpoint(path, device="cuda", group=dist.group.WORLD)
    pids = [None] * n
    dist.all_gather_object(pids, os.getpid())
    seen = None
    if rank == 0 and shutil.which("nvidia-smi"):
        text = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=60).stdout
        seen = [line.split(",")[0].strip() for line in text.splitlines() if line.strip()]
    dist.barrier()
    return {"pids": pids, "seen": seen}


def test_one_context_per_process(ckpt):
    res = dist_harness.run(_context_worker, RANKS, (ckpt,), backend="nccl", deadline=300)
    assert "ok" in res[0], res[0]
    pids, seen = res[0]["ok"]["pids"], res[0]["ok"]["seen"]
    if not seen or not any(str(p) in seen for p in pids):
        pytest.skip("nvidia-smi lists no process of this run (PID namespace)")
    for p in pids:
        assert seen.count(str(p)) == 1, f"process {p} holds {seen.count(str(p))} contexts"
