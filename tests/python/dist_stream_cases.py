# SPDX-License-Identifier: Apache-2.0
"""Workers and checks of iter_checkpoint and of many hosts into CUDA tensors,
shared by the NCCL suite (test_dist_stream_gpu.py) and the one-GPU one
(test_dist_one_gpu.py). The checkpoint: dist_cases.write_three_kinds, 48
tensors of 4 MiB, whole or split by RULES."""
from __future__ import annotations

import os

import torch

import dist_cases as dc

MIB = 1 << 20
BOUND = 64 * MIB
RULES = {r"^col\.": 0, r"^row\.": 1}


def stream_worker(rank, n, path, raise_on):
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


def check_consumer_raised(res: list) -> None:
    """Rank 1's consumer raised at its third tensor: rank 1 saw its own
    error, every other rank DistributedLoadError naming rank 1."""
    assert res[1].get("ok") == "raised \"the consumer's own error\"", res[1]
    for rank, r in enumerate(res):
        if rank != 1:
            assert r.get("type") == "DistributedLoadError", (rank, r)
            assert "rank 1 stopped before the load completed" in r["error"]


def hosts_worker(rank, n, paths):
    """load_checkpoint with the ranks as two hosts (UFILE_HOST_ID), host h
    loading from ``paths[h]``: ({name: bytes of the part}, the pieces read)."""
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


def check_hosts(res: list, arrays: dict, lacking: int | None = None) -> None:
    """Every rank's parts right; no host reads a byte twice; the ranks of
    host ``lacking`` read nothing."""
    dims = dc.dims_of(arrays, RULES)
    per_host: dict = {}
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        got, reads = r["ok"]
        for name in arrays:
            assert got[name] == dc.expected(arrays, name, dims[name], rank, len(res)).tobytes()
        per_host.setdefault(rank * 2 // len(res), []).extend(reads)
    for host, reads in per_host.items():
        if host == lacking:
            assert reads == [], f"host {host} lacks the files but read {len(reads)} pieces"
        seen: dict = {}
        for f, off, size in sorted(reads):
            assert seen.get(f, 0) <= off, f"host {host} read {f} at {off} twice"
            seen[f] = off + size
