# SPDX-License-Identifier: Apache-2.0
"""The collective load over gloo with 1-4 CPU processes: replicas, tensor
parallel (dimension 0, inner dimensions, uneven), subsets, sub-groups, the
iterator, and the failure table (every rank raises, none hangs: each run has a
deadline and kills stragglers)."""
from __future__ import annotations

import os
import shutil

import pytest

import dist_cases as dc
import dist_harness
from fs_support import module_dir

DEADLINE = 120
SMALL = 64 << 10  # max_device_bytes small enough for several chunks and staging slots


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "dist") as root:
        path = os.path.join(root, "ckpt")
        yield path, dc.write_checkpoint(path)


def _load_worker(rank, n, path, rules, select_kind, options, fault):
    import torch.distributed as dist
    from ufile import safetensors as us
    if fault == "bad_header":   # each rank a host of its own: rank 1 reads its headers
        os.environ["UFILE_HOST_ID"] = f"host{rank}"
    _inject(fault, rank, path)
    select = _select(select_kind, rank)
    out = us.load_checkpoint(path, device="cpu", group=dist.group.WORLD, shard=rules,
                             select=select, **options)
    return {name: t.contiguous().reshape(-1).view(__import__("torch").uint8).numpy().tobytes()
            for name, t in out.items()}, {n: tuple(t.shape) for n, t in out.items()}


def _select(kind, rank):
    if kind is None:
        return None
    if kind == "experts":  # rank r: its expert (r mod 4) and everything shared
        return lambda name: ".experts." not in name or name.endswith(f"experts.{rank % 4}.w")
    if kind == "pipeline":  # rank 0: shard 1's tensors only; others: nothing of shard 1
        first = {"embed.weight", "layers.0.norm", "layers.0.q.weight", "layers.0.o.weight"}
        return (lambda name: name in first) if rank == 0 else (lambda name: name not in first)
    if kind == "nothing":  # the last rank needs nothing at all
        return (lambda name: False) if rank == 1 else None
    raise ValueError(kind)


def _inject(fault, rank, path):
    """Faults one rank (rank 1) injects into itself."""
    if fault is None or rank != 1:
        return
    from ufile.safetensors import _engine, _format
    if fault == "read_error_late":  # cuFileRead fails (CU_FILE_IO_ERROR) from the third call
        lib = _FailingLib(_engine._lib.lib())
        _engine._lib.lib = lambda: lib
    elif fault == "exit_mid_load":
        real, calls = _engine._read, [0]

        def dying(piece):
            calls[0] += 1
            if calls[0] >= 2:
                os._exit(3)
            return real(piece)
        _engine._read = dying
    elif fault == "raise_mid_pipeline":  # an exception of the rank's own, third piece on
        real_split, calls = _engine.split, [0]

        def raising(*a, **k):
            calls[0] += 1
            if calls[0] >= 3:
                raise RuntimeError("injected in the pipeline")
            return real_split(*a, **k)
        _engine.split = raising
    elif fault in ("oom", "oom_output"):  # staging before any read, or an output mid-load
        from ufile.safetensors import _frameworks

        def no_memory(*a, **k):
            raise RuntimeError("CUDA out of memory (injected)")
        if fault == "oom":
            _frameworks.Torch.bytes_buffer = no_memory
        else:
            real_empty = _frameworks.Torch.empty

            def no_output(self, info, *a, **k):
                return no_memory() if info.dtype == "F32" else real_empty(self, info, *a, **k)
            _frameworks.Torch.empty = no_output
    elif fault == "bad_header":
        real = _format.read_header

        def bad(p):
            if p.endswith("00003-of-00004.safetensors"):
                raise _format.SafetensorError(f"invalid safetensors file ({p}): injected")
            return real(p)
        _format.read_header = bad
        import ufile.safetensors as us
        us.read_header = bad


class _FailingLib:
    def __init__(self, real):
        self.real, self.calls = real, 0

    def __getattr__(self, name):
        return getattr(self.real, name)

    def cuFileRead(self, *args):
        self.calls += 1
        return -5044 if self.calls >= 3 else self.real.cuFileRead(*args)


def _run(ckpt, n, rules=None, select=None, options=None, fault=None, pg_timeout=30):
    path, arrays = ckpt
    return dist_harness.run(_load_worker, n, (path, rules, select, options or {}, fault),
                            deadline=DEADLINE, pg_timeout=pg_timeout)


def _check(results, arrays, n, rules=None, select=None):
    dims = dc.dims_of(arrays, rules)
    for rank, res in enumerate(results):
        assert "ok" in res, f"rank {rank}: {res.get('trace', res)}"
        got, shapes = res["ok"]
        sel = _select(select, rank)
        names = [k for k in arrays if sel is None or sel(k)]
        assert sorted(got) == sorted(names), rank
        for name in names:
            want = dc.expected(arrays, name, dims[name], rank, n)
            assert shapes[name] == want.shape, (rank, name)
            assert got[name] == want.tobytes(), (rank, name)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_replicas(ckpt, n):
    _check(_run(ckpt, n, options={"max_device_bytes": SMALL}), ckpt[1], n)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_tensor_parallel_every_dimension_and_uneven(ckpt, n):
    res = _run(ckpt, n, rules=dc.SHARD_RULES, options={"max_device_bytes": SMALL})
    _check(res, ckpt[1], n, rules=dc.SHARD_RULES)


def test_eight_ranks(ckpt):
    """The largest group the GPU machines would give (8): replicas and tensor
    parallel with more ranks than some dimensions have indices."""
    _check(_run(ckpt, 8, options={"max_device_bytes": SMALL}), ckpt[1], 8)
    res = _run(ckpt, 8, rules=dc.SHARD_RULES, options={"max_device_bytes": SMALL})
    _check(res, ckpt[1], 8, rules=dc.SHARD_RULES)


@pytest.mark.parametrize("depth", [3, 5])
def test_more_staging_buffers(ckpt, depth):
    opts = {"max_device_bytes": SMALL * depth // 2, "staging_buffers": depth}
    _check(_run(ckpt, 3, rules=dc.SHARD_RULES, options=opts), ckpt[1], 3, rules=dc.SHARD_RULES)


def test_default_round_size_one_round(ckpt):
    _check(_run(ckpt, 2, rules=dc.SHARD_RULES), ckpt[1], 2, rules=dc.SHARD_RULES)


@pytest.mark.parametrize("select,n", [("experts", 4), ("pipeline", 2), ("nothing", 2)])
def test_subsets(ckpt, select, n):
    res = _run(ckpt, n, rules=dc.SHARD_RULES, select=select,
               options={"max_device_bytes": SMALL})
    _check(res, ckpt[1], n, rules=dc.SHARD_RULES, select=select)


def _iter_worker(rank, n, path):
    import torch
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_exec
    _dist_exec.AGREE_EVERY = 2   # tensors yielded as checkpoints complete, not all at the end
    got = []   # (name, bytes as yielded)
    for name, t in us.iter_checkpoint(path, group=dist.group.WORLD, shard=dc.SHARD_RULES,
                                      max_device_bytes=SMALL):
        got.append((name, t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()))
    return got


def test_iterator_yields_each_tensor_once_and_complete(ckpt):
    res = dist_harness.run(_iter_worker, 3, (ckpt[0],), deadline=DEADLINE)
    dims = dc.dims_of(ckpt[1], dc.SHARD_RULES)
    for rank, r in enumerate(res):
        assert "ok" in r, r
        names = [name for name, _ in r["ok"]]
        assert sorted(names) == sorted(ckpt[1]), names
        for name, raw in r["ok"]:
            want = dc.expected(ckpt[1], name, dims[name], rank, 3)
            assert raw == want.tobytes(), (rank, name)


def _close_worker(rank, n, path):
    """Rank 1 takes one tensor and closes the iterator while the others, whose
    reads are slowed, are still loading."""
    import time
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_exec, _engine
    _dist_exec.AGREE_EVERY = 1   # on every rank: the status all-reduces must pair up
    _dist_exec.GATE_LAG = 1
    if rank != 1:
        real = _engine._read

        def slow(piece):
            time.sleep(0.2)
            return real(piece)
        _engine._read = slow
        dict(us.iter_checkpoint(path, group=dist.group.WORLD, max_device_bytes=SMALL))
        return "loaded"
    it = us.iter_checkpoint(path, group=dist.group.WORLD, max_device_bytes=SMALL)
    name, _ = next(it)
    it.close()
    return f"closed after {name}"


def test_closing_the_iterator_on_one_rank_makes_the_others_raise(ckpt):
    res = dist_harness.run(_close_worker, 3, (ckpt[0],), deadline=DEADLINE)
    assert res[1].get("ok", "").startswith("closed after "), res[1]
    for rank in (0, 2):
        assert res[rank].get("type") == "DistributedLoadError", (rank, res[rank])
        assert "rank 1 stopped before the load completed" in res[rank]["error"], res[rank]


def _count_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    counts = {}
    for fn in ("broadcast", "all_to_all_single", "all_reduce", "all_gather_object",
               "all_gather", "barrier", "broadcast_object_list", "new_group"):
        real = getattr(dist, fn)

        def counting(*a, _real=real, _fn=fn, **k):
            counts[_fn] = counts.get(_fn, 0) + 1
            return _real(*a, **k)
        setattr(dist, fn, counting)
    us.load_checkpoint(path, group=dist.group.WORLD, shard=dc.SHARD_RULES,
                       max_device_bytes=SMALL)
    return counts


def test_collectives_per_load(ckpt):
    """The plan's broadcasts and all-to-alls, one status all-reduce every
    AGREE_EVERY collectives, one agreement before the first read and one at
    the end, the exchange of the set-up and the one of what each rank found,
    and the headers sent from the rank that read them over its copy's group
    (here every rank's: the default group itself, so no new group and, on
    NCCL, no second communicator set up by a first load): nothing per round."""
    from ufile.safetensors import _dist, _dist_exec, _dist_plan, _dist_rules
    from ufile.safetensors import _checkpoint_headers
    headers = _checkpoint_headers(ckpt[0])
    names = {n for h in headers for n in h.tensors}
    for n in (2, 3):
        chunk, slab = _dist.split_staging(SMALL, _dist.DEFAULT_STAGING_BUFFERS, n)
        plan = _dist_plan.make_plan(headers, _dist_rules.split_dims(headers, dc.SHARD_RULES),
                                    [names] * n, chunk, slab)
        bcast = sum(isinstance(op, _dist_plan.Broadcast) for op in plan.ops)
        want = {"broadcast": bcast, "all_to_all_single": len(plan.ops) - bcast,
                "all_reduce": 2 + len(plan.ops) // _dist_exec.AGREE_EVERY,
                "all_gather_object": 2, "broadcast_object_list": 1}
        assert bcast and len(plan.ops) > bcast
        for r in dist_harness.run(_count_worker, n, (ckpt[0],), deadline=DEADLINE):
            assert r.get("ok") == want, r


def test_timeline_names_the_set_up_and_the_walk(ckpt, tmp_path, monkeypatch):
    """UFILE_DIST_TRACE: one timeline a rank and load, from the call: the
    set-up's phases in order, then the walk's reads and collectives, then
    the final agreement."""
    import json
    monkeypatch.setenv("UFILE_DIST_TRACE", str(tmp_path / "trace" / "load"))
    _check(_run(ckpt, 2, rules=dc.SHARD_RULES, options={"max_device_bytes": SMALL}),
           ckpt[1], 2, rules=dc.SHARD_RULES)
    for rank in (0, 1):
        events = json.load(open(tmp_path / "trace" / f"load.rank{rank}.1.json"))
        kinds = [e[1] for e in events]
        assert kinds[:7] == ["options agreed", "headers", "checkpoint agreed", "planned",
                             "staging allocated", "files opened", "prepared"], kinds[:8]
        assert {"submit", "read", "issue", "alloc", "direct", "direct read"} <= set(kinds), \
            set(kinds)
        # the set-up's agreement is waited for before the first collective only
        assert kinds.count("agreed prepared") == 1
        assert kinds.index("agreed prepared") < kinds.index("issue"), kinds
        assert kinds[-1] == "agreed" and events[-1][2] is True, events[-1]


def _subgroup_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    mine = groups[rank // 2]
    out = us.load_checkpoint(path, group=mine, shard=dc.SHARD_RULES,
                             max_device_bytes=SMALL)
    return {k: t.reshape(-1).view(__import__("torch").uint8).numpy().tobytes()
            for k, t in out.items()}


def test_two_subgroups_load_at_once(ckpt):
    res = dist_harness.run(_subgroup_worker, 4, (ckpt[0],), deadline=DEADLINE)
    dims = dc.dims_of(ckpt[1], dc.SHARD_RULES)
    for rank, r in enumerate(res):
        assert "ok" in r, r
        for name, a in ckpt[1].items():
            want = dc.expected(ckpt[1], name, dims[name], rank % 2, 2)
            assert r["ok"][name] == want.tobytes(), (rank, name)


# -- failures: every rank raises DistributedLoadError naming the failing rank --

def _all_raise(results, *words):
    for rank, res in enumerate(results):
        assert "error" in res, f"rank {rank} returned {res}"
        assert res["type"] == "DistributedLoadError", res["error"]
        for w in words:
            assert w in res["error"], (w, res["error"])


@pytest.mark.parametrize("fault,words", [
    ("read_error_late", ["rank 1", "CU_FILE_IO_ERROR", "reading tensor", ".safetensors"]),
    ("oom", ["rank 1", "out of memory", "preparing the load"]),
    ("oom_output", ["rank 1", "out of memory", "tensor '"]),
    ("bad_header", ["rank 1", "00003-of-00004.safetensors", "injected"]),
    ("raise_mid_pipeline", ["rank 1", "injected in the pipeline", "tensor '"]),
])
def test_one_rank_fails_every_rank_raises(ckpt, fault, words):
    _all_raise(_run(ckpt, 3, rules=dc.SHARD_RULES, options={"max_device_bytes": SMALL},
                    fault=fault), *words)


def _copies_worker(rank, n, paths):
    import torch
    import torch.distributed as dist
    from ufile import safetensors as us
    with dc.recorded_reads() as reads:
        out = us.load_checkpoint(paths[rank], group=dist.group.WORLD, max_device_bytes=SMALL)
    return ({k: t.reshape(-1).view(torch.uint8).numpy().tobytes() for k, t in out.items()},
            sorted({p.file.path for p in reads}))


def test_a_shard_missing_from_one_ranks_copy_comes_from_the_others(ckpt, tmp_path):
    """Rank 1's copy (another path) lacks a shard: rank 1 reads its other
    shards from its copy and receives that one's bytes from rank 0."""
    broken = tmp_path / "broken"
    shutil.copytree(ckpt[0], broken)
    os.remove(broken / "model-00002-of-00004.safetensors")
    paths = [ckpt[0], str(broken)]
    res = dist_harness.run(_copies_worker, 2, (paths,), deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        got, files = r["ok"]
        assert got == {k: a.tobytes() for k, a in ckpt[1].items()}, rank
        assert all(f.startswith(paths[rank] + os.sep) for f in files), (rank, files)
    assert not any(f.endswith("00002-of-00004.safetensors") for f in res[1]["ok"][1])


def _paths_worker(rank, n, paths, rules=None):
    import torch.distributed as dist
    from ufile import safetensors as us
    with dc.recorded_reads() as reads:
        try:
            us.load_checkpoint(paths[rank], group=dist.group.WORLD,
                               shard=rules[rank] if rules else None)
        finally:
            assert not reads, f"rank {rank} read {len(reads)} pieces before the failure"
    return "loaded"


def test_ranks_disagree_on_the_checkpoint(ckpt, tmp_path):
    other = tmp_path / "other"
    dc.write_checkpoint(str(other), shards=3)
    res = dist_harness.run(_paths_worker, 2, ([ckpt[0], str(other)],), deadline=DEADLINE)
    _all_raise(res, "disagree on the checkpoint", "rank 1")


def test_ranks_disagree_on_the_rules(ckpt):
    rules = [dc.SHARD_RULES, {**dc.SHARD_RULES, r"^cube$": 2}]
    res = dist_harness.run(_paths_worker, 2, ([ckpt[0], ckpt[0]], rules), deadline=DEADLINE)
    _all_raise(res, "disagree on the shard rules", "'cube'")


def _round_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    us.load_checkpoint(path, group=dist.group.WORLD, max_device_bytes=SMALL * (rank + 1))
    return "loaded"


def test_ranks_disagree_on_the_staging(ckpt):
    res = dist_harness.run(_round_worker, 2, (ckpt[0],), deadline=DEADLINE)
    _all_raise(res, "disagree on the staging", "rank 1", str(SMALL * 2))


def test_rule_names_a_dimension_the_tensor_lacks(ckpt):
    res = _run(ckpt, 2, rules={r"layers\.0\.norm": 1})
    _all_raise(res, "'layers.0.norm'", "dimension 1")


def test_a_rank_that_dies_makes_the_others_raise(ckpt):
    # A rank that saw the exit stops joining; one waiting on it in a collective
    # raises at the group's timeout, here 8 s.
    res = _run(ckpt, 3, options={"max_device_bytes": SMALL}, fault="exit_mid_load",
               pg_timeout=8)
    assert res[1] == {"error": "exited with code 3 and no result", "type": "Exit"}, res[1]
    for rank in (0, 2):
        assert res[rank].get("type") == "DistributedLoadError", (rank, res[rank])
        assert f"rank {rank}" in res[rank]["error"], res[rank]["error"]


def test_shard_without_group_is_refused(ckpt):
    from ufile import safetensors as us
    with pytest.raises(ValueError, match="pass group="):
        us.load_checkpoint(ckpt[0], shard={"x": 0})
    with pytest.raises(ValueError, match="collective load"):
        us.load_checkpoint(ckpt[0], staging_buffers=4)


def test_bad_options_make_every_rank_raise(ckpt):
    _all_raise(_run(ckpt, 2, options={"staging_buffers": 1}), "rank 0", "rank 1",
               "staging_buffers must be an int of at least 2")
    res = dist_harness.run(_bad_option_worker, 3, (ckpt[0],), deadline=DEADLINE)
    _all_raise(res, "rank 2", "max_device_bytes must be an int", "of 3 ranks")


def _bad_option_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    us.load_checkpoint(path, group=dist.group.WORLD,
                       max_device_bytes="1 GiB" if rank == 2 else SMALL)
    return "loaded"


def _differing_worker(rank, n, path, case):
    """Rank 1 passes something the others do not."""
    import torch.distributed as dist
    from ufile import safetensors as us
    kwargs = {"max_device_bytes": SMALL}
    if rank == 1:
        if case == "direct":
            kwargs["direct"] = False
        elif case == "env":
            os.environ["UFILE_LOAD_INFLIGHT"] = "3"
        elif case == "bad_env":
            os.environ["UFILE_LOAD_REQUEST_BYTES"] = "lots"
        elif case == "unknown_option":
            kwargs["prefetch"] = True
        elif case == "framework":
            kwargs["framework"] = "np"
        elif case == "iterate":
            dict(us.iter_checkpoint(path, group=dist.group.WORLD, **kwargs))
            return "loaded"
    us.load_checkpoint(path, group=dist.group.WORLD, **kwargs)
    return "loaded"


@pytest.mark.parametrize("case,words", [
    ("direct", ["disagree on the direct option", "rank 1 has False"]),
    ("env", ["disagree on the inflight", "rank 1 has 3"]),
    ("bad_env", ["rank 1", "ValueError", "'lots'"]),
    ("unknown_option", ["rank 1", "prefetch"]),
    ("framework", ["rank 1", "framework must be 'pt'"]),
    ("iterate", ["disagree on the call", "rank 1 has 'iter_checkpoint'"]),
])
def test_options_or_environment_differing_on_one_rank(ckpt, case, words):
    """Every rank raises the same error, none reads, none waits."""
    res = dist_harness.run(_differing_worker, 3, (ckpt[0], case), deadline=DEADLINE)
    _all_raise(res, *words)


def _drop_worker(rank, n, path, stream):
    import gc
    import weakref

    import torch.distributed as dist
    from ufile import safetensors as us
    gc.disable()   # freed by reference counting alone, as CPython frees them
    try:
        opts = {"group": dist.group.WORLD, "shard": dc.SHARD_RULES, "max_device_bytes": SMALL}
        out = dict(us.iter_checkpoint(path, **opts)) if stream else \
            us.load_checkpoint(path, **opts)
        refs = [weakref.ref(t) for t in out.values()]
        del out
        return sum(r() is not None for r in refs), len(refs)
    finally:
        gc.enable()


@pytest.mark.parametrize("stream", [False, True], ids=["load", "iter"])
def test_dropped_outputs_are_freed_without_the_garbage_collector(ckpt, stream):
    """Each returned tensor owns its storage: dropping the result frees it at
    once, not when the garbage collector finds the load's reference cycles."""
    for rank, res in enumerate(dist_harness.run(_drop_worker, 2, (ckpt[0], stream),
                                                deadline=DEADLINE)):
        assert "ok" in res, f"rank {rank}: {res.get('trace', res)}"
        alive, total = res["ok"]
        assert total > 0 and alive == 0, f"rank {rank}: {alive} of {total} still alive"


def _open_worker(rank, n, path):
    import threading

    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _engine
    threads: list = []
    with dc.observed(_engine, "open_for_read",
                     lambda *a, **k: threads.append(threading.current_thread().name)):
        us.load_checkpoint(path, group=dist.group.WORLD, shard=dc.SHARD_RULES,
                           max_device_bytes=SMALL)
    return threads


def test_files_are_opened_ahead_while_the_load_is_planned(ckpt):
    """Every file is opened (cuFile-registered) on the opening threads started
    once the headers are known, not one after the other before the first read."""
    files = [f for f in os.listdir(ckpt[0]) if f.endswith(".safetensors")]
    for rank, res in enumerate(dist_harness.run(_open_worker, 2, (ckpt[0],),
                                                deadline=DEADLINE)):
        assert "ok" in res, f"rank {rank}: {res.get('trace', res)}"
        assert len(res["ok"]) == len(files), res["ok"]
        assert all(t.startswith("ufile-load-open") for t in res["ok"]), res["ok"]


def _sample_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_hosts
    calls: list = []
    with dc.observed(_dist_hosts, "file_identity", lambda path, *a: calls.append(path)):
        us.load_checkpoint(path, group=dist.group.WORLD, max_device_bytes=SMALL)
    return len(calls)


def test_one_copy_is_not_sampled(ckpt):
    """Every rank sees the same copy: its files have nothing to be compared
    with, and none is sampled (copies on several hosts are: test_dist_hosts)."""
    for rank, res in enumerate(dist_harness.run(_sample_worker, 2, (ckpt[0],),
                                                deadline=DEADLINE)):
        assert res.get("ok") == 0, f"rank {rank}: {res.get('trace', res)}"


def _close_order_worker(rank, n, path, fault):
    import re
    import threading

    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_alloc, _frameworks
    seen: list = []

    def readers_alive(_allocator) -> None:
        seen.append(sorted(t.name for t in threading.enumerate()
                           if re.fullmatch(r"ufile-load-\d+", t.name)))
    if fault and rank == 1:
        def no_memory(*a, **k):
            raise RuntimeError("CUDA out of memory (injected)")
        _frameworks.Torch.bytes_buffer = no_memory
    with dc.observed(_dist_alloc.Allocator, "close", readers_alive):
        try:
            us.load_checkpoint(path, group=dist.group.WORLD, shard=dc.SHARD_RULES,
                               max_device_bytes=SMALL)
        except us.DistributedLoadError:
            pass
    return seen


@pytest.mark.parametrize("fault", [False, True], ids=["loaded", "a_rank_failed_to_prepare"])
def test_reads_have_ended_before_the_outputs_are_let_go(ckpt, fault):
    """Reads write through raw pointers: every reader thread has ended before
    the allocator lets go of the outputs (a rank that prepared reads before
    the set-up's agreement, which then fails)."""
    for rank, res in enumerate(dist_harness.run(_close_order_worker, 3, (ckpt[0], fault),
                                                deadline=DEADLINE)):
        assert "ok" in res, f"rank {rank}: {res.get('trace', res)}"
        assert all(alive == [] for alive in res["ok"]), (rank, res["ok"])
