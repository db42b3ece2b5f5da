# SPDX-License-Identifier: Apache-2.0
"""UfileStorageReader under dcp.load (torch 2.x only: the GPU machine runs it):
a checkpoint saved by save_checkpoint, loaded by 2 and 4 processes into
replicated tensors and into DTensors sharded along outer, inner and last
dimensions, on gloo (CPU tensors; NCCL: test_load_dcp_multigpu.py); the same
bytes as torch's HuggingFaceStorageReader; a rank's bad request fails every
rank."""
from __future__ import annotations

import os

import pytest

import dist_harness
import load_dcp_cases
import save_dist_cases as cases
from ufile.safetensors import save_checkpoint

SHARD = 1000  # bytes: the model's 3.5 KB in several files

pytest.importorskip("torch.distributed.checkpoint", reason="torch 1.x has no DCP")
pytest.importorskip("torch.distributed.tensor", reason="torch before 2.4 has no public DTensor")


@pytest.fixture
def checkpoint(io_dir):
    path = os.path.join(str(io_dir), "ck")
    save_checkpoint(cases.full(), path, max_shard_size=SHARD)
    assert len(os.listdir(path)) > 2  # several shards and the index
    return path


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("kind", ["plain", "dtensor"])
def test_dcp_load_cpu(checkpoint, n, kind):
    results = dist_harness.run(load_dcp_cases.worker, n, (checkpoint, kind, "cpu"), deadline=300)
    for r, res in enumerate(results):
        assert str(res.get("ok", "")).startswith("loaded"), f"rank {r}: {res}"


def test_dcp_load_failure_is_collective(checkpoint):
    results = dist_harness.run(load_dcp_cases.failing_worker, 2, (checkpoint,), deadline=180)
    for r, res in enumerate(results):
        assert "error" in res and "embed.weight" in res["error"], f"rank {r}: {res}"
