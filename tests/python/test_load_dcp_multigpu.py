# SPDX-License-Identifier: Apache-2.0
"""UfileStorageReader under dcp.load over NCCL, one process per GPU (2 GPUs):
replicated CUDA tensors and DTensors on a 1-D CUDA mesh, byte-exact."""
from __future__ import annotations

import pytest

import dist_harness
import load_dcp_cases
from test_load_dcp_gpu import checkpoint  # noqa: F401 - the fixture

pytest.importorskip("torch.distributed.checkpoint", reason="torch 1.x has no DCP")
pytest.importorskip("torch.distributed.tensor", reason="torch before 2.4 has no public DTensor")


@pytest.mark.parametrize("kind", ["plain", "dtensor"])
def test_dcp_load_nccl(checkpoint, kind):  # noqa: F811 - the fixture
    results = dist_harness.run(load_dcp_cases.worker, 2, (checkpoint, kind, "cuda"),
                               backend="nccl", deadline=300)
    for r, res in enumerate(results):
        assert str(res.get("ok", "")).startswith("loaded"), f"rank {r}: {res}"
