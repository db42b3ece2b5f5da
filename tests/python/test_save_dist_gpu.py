# SPDX-License-Identifier: Apache-2.0
"""The collective save over NCCL, one process per GPU (UFILE_TEST_RANKS,
default every GPU; 2 and 4 on the GPU machines): replicas and tensor-parallel
parts held in GPU memory give, byte for byte, the checkpoint one process saves
from the full tensors (each gathered tensor joined late on its stream, so a
write that does not wait for it is caught); a failing write on one rank raises
on every rank."""
from __future__ import annotations

import os

import pytest
import torch

import dist_harness
import save_dist_cases as cases
from ufile.safetensors import save_checkpoint


def _worker(rank: int, n: int, root: str, scenarios: list) -> dict:
    import torch as t
    from ufile.safetensors import _save_dist
    real_holding = cases.holding
    # Each gathered tensor is joined ~25 ms late on the stream: a write that
    # did not wait for the joined bytes would write stale ones, every time.
    _save_dist.after_gather = lambda: t.cuda._sleep(50_000_000)

    def on_gpu(kind, r, size):
        sd, rules = real_holding(kind, r, size)
        return {k: v.to("cuda") for k, v in sd.items()}, rules
    cases.holding = on_gpu
    try:
        return cases.worker(rank, n, root, scenarios)
    finally:
        cases.holding = real_holding
        t.cuda.synchronize()


def _ranks() -> list:
    count = torch.cuda.device_count()
    env = os.environ.get("UFILE_TEST_RANKS")
    return [int(env)] if env else sorted({2, count} & set(range(2, count + 1)))


@pytest.mark.parametrize("n", _ranks())
def test_collective_save_over_nccl(io_dir, n):
    root = str(io_dir)
    want = os.path.join(root, "expected")
    save_checkpoint(cases.full(), want, max_shard_size=cases.MAX_SHARD)
    scenarios = [("replicas", "replicas", "rep", None), ("tp", "tp", "tp", None),
                 ("fault", "tp", "tp", 1)]
    results = dist_harness.run(_worker, n, (root, scenarios), backend="nccl", deadline=300)
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
