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


def _ranks() -> list:
    count = torch.cuda.device_count()
    env = os.environ.get("UFILE_TEST_RANKS")
    return [int(env)] if env else sorted({2, count} & set(range(2, count + 1)))


@pytest.mark.parametrize("n", _ranks())
def test_collective_save_over_nccl(io_dir, n):
    root = str(io_dir)
    want = os.path.join(root, "expected")
    save_checkpoint(cases.full(), want, max_shard_size=cases.MAX_SHARD)
    results = dist_harness.run(cases.cuda_worker, n, (root, cases.CUDA_SCENARIOS),
                               backend="nccl", deadline=300)
    cases.check_cuda_saves(results, root, want)
