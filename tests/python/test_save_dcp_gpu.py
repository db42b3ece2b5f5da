# SPDX-License-Identifier: Apache-2.0
"""UfileStorageWriter under dcp.save (torch 2.x only: the GPU machine runs it;
gloo on CPU tensors, 2 and 4 processes): a replicated state dict and DTensors
sharded along outer and inner dimensions give, byte for byte, the checkpoint a
single process saves with save_checkpoint; dcp.load reads it back through
torch's HuggingFaceStorageReader, load_checkpoint too."""
from __future__ import annotations

import os

import pytest
import torch

import dist_harness
import save_dcp_cases
import save_dist_cases as cases
from ufile.safetensors import load_checkpoint, save_checkpoint

pytest.importorskip("torch.distributed.checkpoint", reason="torch 1.x has no DCP")


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("kind", ["plain", "dtensor"])
def test_dcp_save_is_the_checkpoint(io_dir, n, kind):
    root = str(io_dir)
    want = os.path.join(root, "expected")
    save_checkpoint(cases.full(), want, max_shard_size=cases.MAX_SHARD)
    results = dist_harness.run(save_dcp_cases.worker, n, (root, kind), deadline=300)
    for r, res in enumerate(results):
        assert res.get("ok") in ("saved", "loaded"), f"rank {r}: {res}"
    got = os.path.join(root, kind)
    assert sorted(os.listdir(got)) == sorted(os.listdir(want))
    for f in os.listdir(want):
        assert open(os.path.join(got, f), "rb").read() == \
            open(os.path.join(want, f), "rb").read(), f
    back = load_checkpoint(got)
    for k, v in cases.full().items():
        assert torch.equal(back[k], v), k
