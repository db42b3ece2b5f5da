# SPDX-License-Identifier: Apache-2.0
"""iter_checkpoint and many hosts over NCCL, one process per GPU (every GPU,
at least 2): the device memory the iterator holds beyond what its consumer
keeps stays within max_device_bytes (the caching allocator's peak, the
consumer dropping each tensor); a consumer raising at a yield makes every
rank raise; the GPUs as two hosts (UFILE_HOST_ID), each with its own copy:
every part right, each host reading each byte once; a host whose path does
not exist receiving every byte from the other."""
from __future__ import annotations

import shutil

import pytest
import torch

import dist_cases as dc
import dist_harness
import dist_stream_cases as sc
from fs_support import module_dir

RANKS = torch.cuda.device_count()
if RANKS < 2:  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs 2 GPUs, torch sees {RANKS}")

DEADLINE = 300


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """48 tensors of 4 MiB (192 MiB, three times the bound) in 3 files: whole,
    split along dimension 0 and along dimension 1."""
    with module_dir(tmp_path_factory, "diststream") as root:
        yield root, dc.write_three_kinds(root, (1024, 1024), 7)


def test_held_memory_within_max_device_bytes(ckpt):
    path, arrays = ckpt
    res = dist_harness.run(sc.stream_worker, RANKS, (path, None), backend="nccl",
                           deadline=DEADLINE)
    dims = dc.dims_of(arrays, sc.RULES)
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        peak, got = r["ok"]
        assert sorted(got) == sorted(arrays)
        for name, raw in got.items():
            assert raw == dc.expected(arrays, name, dims[name], rank, RANKS).tobytes(), name
        print(f"rank {rank}: peak {peak} of {sc.BOUND} bytes (+8 MiB for the consumer's tensor)")
        assert peak <= sc.BOUND + 8 * sc.MIB, (rank, peak)   # the tensor the consumer holds


def test_a_consumer_raising_at_a_yield_makes_every_rank_raise(ckpt):
    sc.check_consumer_raised(dist_harness.run(sc.stream_worker, RANKS, (ckpt[0], 1),
                                              backend="nccl", deadline=DEADLINE))


def test_two_hosts_each_read_each_byte_once(ckpt, tmp_path):
    path, arrays = ckpt
    other = str(tmp_path / "copy")
    shutil.copytree(path, other)
    res = dist_harness.run(sc.hosts_worker, RANKS, ((path, other),), backend="nccl",
                           deadline=DEADLINE)
    sc.check_hosts(res, arrays)


def test_a_host_lacking_the_checkpoint_receives_it(ckpt, tmp_path):
    """Host 1's path does not exist: host 0 reads each byte once (parts host 1
    alone keeps from staging) and host 1's ranks read nothing."""
    path, arrays = ckpt
    res = dist_harness.run(sc.hosts_worker, RANKS, ((path, str(tmp_path / "not-staged")),),
                           backend="nccl", deadline=DEADLINE)
    sc.check_hosts(res, arrays, lacking=1)
