# SPDX-License-Identifier: Apache-2.0
"""The collective load across hosts, over gloo: 4 processes as two hosts of 2
(UFILE_HOST_ID names them), each host with its own copy of the checkpoint
under its own path. Each host reads each byte once (every read counted), no
tensor byte crosses hosts, one rank a host reads the headers; copies that
differ make every rank raise before any read; a host whose path does not
exist gets every byte from a host that holds it, and a host whose copy lacks
some files gets those from a host that holds them."""
from __future__ import annotations

import os
import shutil

import pytest

import dist_cases as dc
import dist_harness

DEADLINE = 120
SMALL = 64 << 10
HOSTS = ("node-a", "node-a", "node-b", "node-b")
GONE = "model-00002-of-00004.safetensors"   # the file a partial copy lacks


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """The same checkpoint twice: host a's copy and host b's."""
    root = tmp_path_factory.mktemp("hosts")
    a, b = str(root / "a"), str(root / "b")
    arrays = dc.write_checkpoint(a)
    shutil.copytree(a, b)
    return a, b, arrays


def _host_worker(rank, n, paths, rules, options):
    """Loads on this rank's host's copy; returns the tensors, every (file,
    offset, size) read and the number of headers read."""
    import torch
    import torch.distributed as dist
    import ufile.safetensors as us
    os.environ["UFILE_HOST_ID"] = HOSTS[rank]
    reads, headers, sent = _count_reads_and_data(dist)
    path = paths[0] if HOSTS[rank] == "node-a" else paths[1]
    load = us.iter_checkpoint if options.pop("iterate", False) else us.load_checkpoint
    out = dict(load(path, group=dist.group.WORLD, shard=rules, **options))
    got = {k: t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
           for k, t in out.items()}
    return got, reads, headers[0], sent[0]


def _count_reads_and_data(dist):
    """Every (file, offset, size) read, the headers read and the collectives
    issued on the whole group, counted from now on in this process."""
    import ufile.safetensors as us
    from ufile.safetensors import _engine
    reads, headers = [], [0]
    real_read, real_header = _engine._read, us.read_header

    def counting(piece):
        reads.append((piece.file.path, piece.file_offset, piece.size))
        return real_read(piece)

    def header(path):
        headers[0] += 1
        return real_header(path)
    _engine._read, us.read_header = counting, header
    return reads, headers, _count_world_data(dist)


def _count_world_data(dist):
    """Counts broadcasts and all-to-alls issued on the whole group."""
    sent = [0]
    for fn in ("broadcast", "all_to_all_single"):
        real = getattr(dist, fn)

        def counting(*a, _real=real, **k):
            if k.get("group") in (None, dist.group.WORLD):
                sent[0] += 1
            return _real(*a, **k)
        setattr(dist, fn, counting)
    return sent


def _covered(reads: list) -> dict:
    """file -> sorted list of (offset, size), checking no byte is read twice."""
    out: dict = {}
    for path, off, size in reads:
        out.setdefault(os.path.basename(path), []).append((off, size))
    for spans in out.values():
        spans.sort()
        for (a, sa), (b, _) in zip(spans, spans[1:]):
            assert a + sa <= b, f"bytes {b}..{a + sa} read twice on one host"
    return out


@pytest.mark.parametrize("rules,iterate", [(None, False), (dc.SHARD_RULES, False),
                                           (dc.SHARD_RULES, True)])
def test_each_host_reads_each_byte_once(copies, rules, iterate):
    a, b, arrays = copies
    options = {"max_device_bytes": SMALL, "iterate": iterate}
    res = dist_harness.run(_host_worker, 4, ((a, b), rules, options), deadline=DEADLINE)
    dims = dc.dims_of(arrays, rules)
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        got, reads, headers, sent = r["ok"]
        for name in arrays:   # parts of the whole group of 4
            want = dc.expected(arrays, name, dims[name], rank, 4)
            assert got[name] == want.tobytes(), (rank, name)
        mine = a if HOSTS[rank] == "node-a" else b
        assert all(p.startswith(mine + os.sep) for p, _, _ in reads), rank
        assert headers == (4 if rank in (0, 2) else 0), (rank, headers)
        assert sent == 0, f"rank {rank} sent tensor bytes over the whole group"
    for host in ((0, 1), (2, 3)):   # no byte twice; with replicas, every byte once
        spans = _covered([x for r in host for x in res[r]["ok"][1]])
        total = sum(s for v in spans.values() for _, s in v)
        if rules is None:
            assert total == sum(arr.nbytes for arr in arrays.values()), (host, total)


def _paths_worker(rank, n, paths, env):
    import torch.distributed as dist
    import ufile.safetensors as us
    if env[rank] is not None:
        os.environ["UFILE_HOST_ID"] = env[rank]
    with dc.recorded_reads() as reads:
        try:
            us.load_checkpoint(paths[rank], group=dist.group.WORLD)
        finally:
            assert not reads, f"rank {rank} read {len(reads)} pieces before the failure"
    return "loaded"


def _all_raise(results, *words):
    for rank, res in enumerate(results):
        assert res.get("type") == "DistributedLoadError", (rank, res)
        for w in words:
            assert w in res["error"], (w, res["error"])


@pytest.mark.parametrize("gone", [(), (GONE,)], ids=["whole", "lacking_a_file"])
def test_copies_that_differ_make_every_rank_raise_before_any_read(copies, tmp_path, gone):
    """Host b holds another revision of one file: same names, shapes and
    offsets (the header digest agrees), other bytes; whether its copy holds
    every file or lacks another one."""
    a, b, _ = copies
    other = _partial_copy(b, str(tmp_path / "other"), gone)
    f = os.path.join(other, "model-00003-of-00004.safetensors")
    with open(f, "r+b") as fh:
        fh.seek(os.path.getsize(f) - 100)
        fh.write(b"\x5a" * 50)
    res = dist_harness.run(_paths_worker, 4, ([a, a, other, other], list(HOSTS)),
                           deadline=DEADLINE)
    _all_raise(res, "model-00003-of-00004.safetensors", "'node-a'", "'node-b'", "differs")


def _load_each_part_right(arrays: dict, paths: list, hosts: tuple, rules, iterate) -> list:
    """_lacking_worker's results on 4 ranks, each rank's parts checked."""
    res = dist_harness.run(_lacking_worker, 4, (paths, hosts, rules, iterate),
                           deadline=DEADLINE)
    dims = dc.dims_of(arrays, rules)
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        for name in arrays:
            assert r["ok"][0][name] == \
                dc.expected(arrays, name, dims[name], rank, 4).tobytes(), (rank, name)
    return res


def _partial_copy(src: str, where: str, gone: tuple) -> str:
    shutil.copytree(src, where)
    for f in gone:
        os.remove(os.path.join(where, f))
    return where


@pytest.mark.parametrize("rules,iterate", [(None, False), (dc.SHARD_RULES, False),
                                           (dc.SHARD_RULES, True)])
def test_a_host_lacking_some_files_gets_them_from_a_host_that_holds_them(
        copies, tmp_path, rules, iterate):
    """Host b's copy lacks one file: its ranks read their other files from
    their own copy and not a byte of that one; host a reads it for both hosts,
    each byte once; only rank 0 reads headers."""
    a, b, arrays = copies
    partial = _partial_copy(b, str(tmp_path / "partial"), (GONE,))
    paths = [a, a, partial, partial]
    res = _load_each_part_right(arrays, paths, HOSTS, rules, iterate)
    for rank, r in enumerate(res):
        _, reads, headers, _ = r["ok"]
        assert all(p.startswith(paths[rank] + os.sep) for p, _, _ in reads), rank
        assert headers == (4 if rank == 0 else 0), (rank, headers)
    host_a = _covered(res[0]["ok"][1] + res[1]["ok"][1])
    host_b = _covered(res[2]["ok"][1] + res[3]["ok"][1])
    assert GONE in host_a and GONE not in host_b, (sorted(host_a), sorted(host_b))
    if rules is None:   # every rank wants every tensor: each host reads what it holds, once
        sizes = {f: sum(s for _, s in spans) for f, spans in host_a.items()}
        assert sizes == {f: sum(s for _, s in spans) for f, spans in host_b.items()} | \
            {GONE: sizes[GONE]}, (sizes, host_b)
        assert sum(sizes.values()) == sum(arr.nbytes for arr in arrays.values())


def test_a_partial_copy_load_writes_one_timeline_a_rank(copies, tmp_path, monkeypatch):
    """UFILE_DIST_TRACE with a copy lacking a file (two groups of files loaded
    in turn): one timeline a rank, holding both groups' agreements."""
    import json
    a, b, arrays = copies
    partial = _partial_copy(b, str(tmp_path / "partial"), (GONE,))
    monkeypatch.setenv("UFILE_DIST_TRACE", str(tmp_path / "trace" / "load"))
    _load_each_part_right(arrays, [a, a, partial, partial], HOSTS, None, False)
    for rank in range(4):
        written = sorted(f for f in os.listdir(tmp_path / "trace")
                         if f.startswith(f"load.rank{rank}."))
        assert written == [f"load.rank{rank}.1.json"], written
        kinds = [e[1] for e in json.load(open(tmp_path / "trace" / written[0]))]
        assert kinds.count("agreed") == 2 and kinds.count("planned") == 2, kinds


def test_copies_that_each_lack_a_file_make_every_rank_raise(copies, tmp_path):
    """No copy holds every file: the headers would have no reader."""
    a, b, _ = copies
    pa = _partial_copy(a, str(tmp_path / "pa"), ("model-00001-of-00004.safetensors",))
    pb = _partial_copy(b, str(tmp_path / "pb"), (GONE,))
    res = dist_harness.run(_paths_worker, 4, ([pa, pa, pb, pb], list(HOSTS)), deadline=DEADLINE)
    _all_raise(res, "no copy of the checkpoint holds every file", "'node-a' lacks "
               "model-00001-of-00004.safetensors", f"'node-b' lacks {GONE}")


def test_host_id_set_on_some_ranks_only(copies):
    a, _, _ = copies
    res = dist_harness.run(_paths_worker, 3, ([a] * 3, ["node-a", None, "node-a"]),
                           deadline=DEADLINE)
    _all_raise(res, "UFILE_HOST_ID", "rank 1")


def _failing_host_worker(rank, n, paths):
    """Rank 3 (host b) fails its reads; host a's load itself succeeds."""
    import torch.distributed as dist
    import ufile.safetensors as us
    from ufile.safetensors import _engine
    os.environ["UFILE_HOST_ID"] = HOSTS[rank]
    if rank == 3:
        def failing(piece):
            raise OSError(5, "injected read error")
        _engine._read = failing
    path = paths[0] if HOSTS[rank] == "node-a" else paths[1]
    us.load_checkpoint(path, group=dist.group.WORLD, shard=dc.SHARD_RULES,
                       max_device_bytes=SMALL)
    return "loaded"


def test_a_failure_on_one_host_makes_every_rank_raise(copies):
    a, b, _ = copies
    res = dist_harness.run(_failing_host_worker, 4, ((a, b),), deadline=DEADLINE)
    _all_raise(res, "rank 3", "injected read error", "of 4 ranks")


def _lacking_worker(rank, n, paths, hosts, rules, iterate):
    """Loads with this rank's host and path (a path that does not exist: the
    host lacks the checkpoint); returns the tensors, every (file, offset,
    size) read, the headers read and the collectives issued on the whole group."""
    import torch
    import torch.distributed as dist
    import ufile.safetensors as us
    os.environ["UFILE_HOST_ID"] = hosts[rank]
    reads, headers, sent = _count_reads_and_data(dist)
    load = us.iter_checkpoint if iterate else us.load_checkpoint
    out = dict(load(paths[rank], group=dist.group.WORLD, shard=rules, max_device_bytes=SMALL))
    got = {k: t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
           for k, t in out.items()}
    return got, reads, headers[0], sent[0]


@pytest.mark.parametrize("hosts,holds,units", [
    (("node-a", "node-a", "node-b", "node-b"), (True, True, False, False), [(0, 1, 2, 3)]),
    (("node-a", "node-b", "node-c", "node-c"), (True, True, False, False), [(0, 2, 3), (1,)]),
])
@pytest.mark.parametrize("rules,iterate", [(None, False), (dc.SHARD_RULES, False),
                                           (dc.SHARD_RULES, True)])
def test_a_host_lacking_the_checkpoint_gets_it_from_a_host_that_holds_it(
        copies, tmp_path, hosts, holds, units, rules, iterate):
    """Ranks whose path does not exist read nothing, not even headers; the
    host that reads for them reads each byte once; bytes cross hosts only to
    the ranks that lack them (none over the whole group when another host
    reads its own copy)."""
    a, b, arrays = copies
    own = {"node-a": a, "node-b": b}
    paths = [own[h] if hold else str(tmp_path / "not-staged") for h, hold in zip(hosts, holds)]
    res = _load_each_part_right(arrays, paths, hosts, rules, iterate)
    for rank, r in enumerate(res):
        _, reads, headers, sent = r["ok"]
        if not holds[rank]:
            assert reads == [] and headers == 0, (rank, len(reads), headers)
        else:
            assert all(p.startswith(paths[rank] + os.sep) for p, _, _ in reads), rank
        if len(units) > 1:   # each unit loads within its own sub-group
            assert sent == 0, f"rank {rank} sent tensor bytes over the whole group"
    for unit in units:
        spans = _covered([x for r in unit for x in res[r]["ok"][1]])
        total = sum(s for v in spans.values() for _, s in v)
        if rules is None:
            assert total == sum(arr.nbytes for arr in arrays.values()), (unit, total)


def _subgroup_lacking_worker(rank, n, a, missing):
    """Ranks 1-3 load over a group of their own: rank 1 (host a) holds the
    checkpoint, ranks 2 and 3 (host b) lack it. Rank 0 only makes the group."""
    import torch
    import torch.distributed as dist
    import ufile.safetensors as us
    os.environ["UFILE_HOST_ID"] = HOSTS[rank]
    group = dist.new_group([1, 2, 3])
    if rank == 0:
        return None
    with dc.recorded_reads() as reads:
        out = us.load_checkpoint(a if rank == 1 else missing, group=group, shard=dc.SHARD_RULES,
                                 max_device_bytes=SMALL)
    return ({k: t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
             for k, t in out.items()}, sum(p.size for p in reads))


def test_a_group_other_than_the_default_one_with_ranks_lacking_the_checkpoint(copies, tmp_path):
    a, _, arrays = copies
    res = dist_harness.run(_subgroup_lacking_worker, 4, (a, str(tmp_path / "none")),
                           deadline=DEADLINE)
    dims = dc.dims_of(arrays, dc.SHARD_RULES)
    for rank in (1, 2, 3):
        assert "ok" in res[rank], res[rank].get("trace", res[rank])
        got, read = res[rank]["ok"]
        for name in arrays:
            assert got[name] == dc.expected(arrays, name, dims[name], rank - 1, 3).tobytes(), \
                (rank, name)
        assert (read > 0) == (rank == 1), (rank, read)


def test_load_into_with_a_host_lacking_some_files(copies, tmp_path):
    """load_into gets a lacking file's bytes from the host that holds it too."""
    a, b, arrays = copies
    partial = _partial_copy(b, str(tmp_path / "partial"), (GONE,))
    res = dist_harness.run(_into_full_worker, 4, ([a, a, partial, partial],),
                           deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert "ok" in r, r.get("trace", r)
        got, reads = r["ok"]
        assert sorted(got) == sorted(arrays), rank
        for name, arr in arrays.items():
            assert got[name] == arr.tobytes(), (rank, name)
        if rank >= 2:
            assert not any(p.endswith(GONE) for p, _, _ in reads), rank


def _into_full_worker(rank, n, paths):
    """load_into of every tensor, whole, into tensors made like load_checkpoint's
    on rank 0's copy; returns their bytes and every read."""
    import torch
    import torch.distributed as dist
    import ufile.safetensors as us
    os.environ["UFILE_HOST_ID"] = HOSTS[rank]
    like = us.load_checkpoint(paths[0]) if rank == 0 else None
    box = [{k: (tuple(t.shape), t.dtype) for k, t in like.items()} if like else None]
    dist.broadcast_object_list(box, src=0)
    reads, _, _ = _count_reads_and_data(dist)
    targets = {k: torch.zeros(shape, dtype=dt) for k, (shape, dt) in box[0].items()}
    us.load_into(paths[rank], targets, group=dist.group.WORLD, max_device_bytes=SMALL)
    got = {k: t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
           for k, t in targets.items()}
    return got, reads
