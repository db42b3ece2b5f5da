# SPDX-License-Identifier: Apache-2.0
"""DTensor outputs and DTensor targets (torch >= 2.x) over NCCL: a 1-D mesh
and the two 2-D meshes of 2 GPUs (1 x 2, 2 x 1), and on 4 GPUs the 2 x 2 mesh
(data parallel x tensor parallel, each way round), uneven shards along
dimension 0, inner dimensions and the last one: every local part equal to
``distribute_tensor``'s of the tensor the safetensors package loads (its own
uneven convention, torch.chunk's), and every full tensor of a dtype NCCL moves
(not int16) equal."""
from __future__ import annotations

import os

import pytest
import torch

import dist_cases as dc
import dist_harness
import dtensor_cases
from fs_support import module_dir

if torch.cuda.device_count() < 2:  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs 2 GPUs, torch sees {torch.cuda.device_count()}")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "dtensor") as root:
        dc.write_checkpoint(os.path.join(root, "ckpt"))
        yield os.path.join(root, "ckpt")


@pytest.mark.parametrize("mesh_shape,split_on", [((2,), 0), ((1, 2), 1), ((2, 1), 0)])
@pytest.mark.parametrize("mode", ["out", "into"])
def test_dtensors_equal_distribute_tensor(ckpt, mesh_shape, split_on, mode):
    _check(ckpt, mesh_shape, split_on, mode)


@pytest.mark.parametrize("split_on", [0, 1])
@pytest.mark.parametrize("mode", ["out", "into"])
def test_2x2_mesh_on_4_gpus(ckpt, split_on, mode):
    if torch.cuda.device_count() < 4:
        pytest.skip(f"a 2 x 2 mesh needs 4 GPUs, torch sees {torch.cuda.device_count()}")
    _check(ckpt, (2, 2), split_on, mode)


def _check(ckpt, mesh_shape, split_on, mode):
    n = 1
    for s in mesh_shape:
        n *= s
    res = dist_harness.run(dtensor_cases.dtensor_worker, n,
                           (ckpt, mesh_shape, split_on, mode), backend="nccl", deadline=300)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"] == [], (rank, r["ok"])
