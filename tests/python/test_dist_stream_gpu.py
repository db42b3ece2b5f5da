# SPDX-License-Identifier: Apache-2.0
"""iter_checkpoint and many hosts over NCCL, one process per GPU (every GPU,
at least 2): the device memory the iterator holds beyond what its consumer
keeps stays within max_device_bytes (the caching allocator's peak, the
consumer dropping each tensor); a consumer raising at a yield makes every
rank raise; the GPUs as two hosts (UFILE_HOST_ID), each with its own copy:
every part right, each host reading each byte once; a host whose path does
not exist receiving every byte from the other."""
from __future__ import annotations

import os
import shutil

import pytest
import torch

import dist_cases as dc
import dist_harness
from fs_support import module_dir

RANKS = torch.cuda.device_count()
if RANKS < 2:  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs 2 GPUs, torch sees {RANKS}")

MIB = 1 << 20
BOUND = 64 * MIB
RULES = {r"^col\.": 0, r"^row\.": 1}
DEADLINE = 300


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """48 tensors of 4 MiB (192 MiB, three times BOUND) in 3 files: whole,
    split along dimension 0 and along dimension 1."""
    with module_dir(tmp_path_factory, "diststream") as root:
        yield root, dc.write_three_kinds(root, (1024, 1024), 7)


def _stream_worker(rank, n, path, raise_on):
    """Returns (peak bytes the caching allocator held beyond the start,
    {name: bytes of the part}) or the consumer's own error."""
    import torch.distributed as dist
    from ufile import safetensors as us
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    got = {}
    try:
        for name, t in us.iter_checkpoint(path, device="cuda", group=dist.group.WORLD,
                                          shard=RULES, max_device_bytes=BOUND):
            got[name] = t.cpu().numpy().tobytes()
            del t
            if rank == raise_on and len(got) == 3:
                raise KeyError("the consumer's own error")
    except KeyError as exc:
        return f"raised {exc}"
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base, got


def test_held_memory_within_max_device_bytes(ckpt):
    path, arrays = ckpt
    res = dist_harness.run(_stream_worker, RANKS, (path, None), backend="nccl",
                           deadline=DEADLINE)
    dims = dc.dims_of(arrays, RULES)
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        peak, got = r["ok"]
        assert sorted(got) == sorted(arrays)
        for name, raw in got.items():
            assert raw == dc.expected(arrays, name, dims[name], rank, RANKS).tobytes(), name
        print(f"rank {rank}: peak {peak} of {BOUND} bytes (+8 MiB for the consumer's tensor)")
        assert peak <= BOUND + 8 * MIB, (rank, peak)   # the tensor the consumer holds


def test_a_consumer_raising_at_a_yield_makes_every_rank_raise(ckpt):
    res = dist_harness.run(_stream_worker, RANKS, (ckpt[0], 1), backend="nccl",
                           deadline=DEADLINE)
    assert res[1].get("ok") == "raised \"the consumer's own error\"", res[1]
    for rank, r in enumerate(res):
        if rank != 1:
            assert r.get("type") == "DistributedLoadError", (rank, r)
            assert "rank 1 stopped before the load completed" in r["error"]


def _hosts_worker(rank, n, paths):
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _engine
    host = rank * 2 // n
    os.environ["UFILE_HOST_ID"] = f"node-{host}"
    reads = []
    real = _engine._read

    def counting(piece):
        reads.append((os.path.basename(piece.file.path), piece.file_offset, piece.size))
        return real(piece)
    _engine._read = counting
    out = us.load_checkpoint(paths[host], device="cuda", group=dist.group.WORLD, shard=RULES)
    return {k: t.cpu().numpy().tobytes() for k, t in out.items()}, reads


def _check_hosts(res: list, arrays: dict, lacking: int | None = None) -> None:
    """Every rank's parts right; no host reads a byte twice; the ranks of
    host ``lacking`` read nothing."""
    dims = dc.dims_of(arrays, RULES)
    per_host: dict = {}
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        got, reads = r["ok"]
        for name in arrays:
            assert got[name] == dc.expected(arrays, name, dims[name], rank, RANKS).tobytes()
        per_host.setdefault(rank * 2 // RANKS, []).extend(reads)
    for host, reads in per_host.items():
        if host == lacking:
            assert reads == [], f"host {host} lacks the files but read {len(reads)} pieces"
        seen: dict = {}
        for f, off, size in sorted(reads):
            assert seen.get(f, 0) <= off, f"host {host} read {f} at {off} twice"
            seen[f] = off + size


def test_two_hosts_each_read_each_byte_once(ckpt, tmp_path):
    path, arrays = ckpt
    other = str(tmp_path / "copy")
    shutil.copytree(path, other)
    res = dist_harness.run(_hosts_worker, RANKS, ((path, other),), backend="nccl",
                           deadline=DEADLINE)
    _check_hosts(res, arrays)


def test_a_host_lacking_the_checkpoint_receives_it(ckpt, tmp_path):
    """Host 1's path does not exist: host 0 reads each byte once (parts host 1
    alone keeps from staging) and host 1's ranks read nothing."""
    path, arrays = ckpt
    res = dist_harness.run(_hosts_worker, RANKS, ((path, str(tmp_path / "not-staged")),),
                           backend="nccl", deadline=DEADLINE)
    _check_hosts(res, arrays, lacking=1)
