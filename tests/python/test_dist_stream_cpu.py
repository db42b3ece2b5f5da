# SPDX-License-Identifier: Apache-2.0
"""iter_checkpoint over gloo: the memory it holds beyond what the consumer
keeps stays within max_device_bytes (measured with a consumer that drops each
tensor), and a consumer that raises at a yield, or stops iterating on every
rank, ends the load on every rank (each run has a deadline)."""
from __future__ import annotations

import pytest

import dist_cases as dc
import dist_harness

DEADLINE = 120
BOUND = 128 << 10          # max_device_bytes of the bounded runs
RULES = {r"^col\.": 0, r"^row\.": 1}


@pytest.fixture(scope="module")
def stream_ckpt(tmp_path_factory):
    """48 tensors of 8 KiB (384 KiB, three times BOUND) in 3 files: whole,
    split along dimension 0, and along dimension 1."""
    path = str(tmp_path_factory.mktemp("stream"))
    return path, dc.write_three_kinds(path, (64, 32), 5)


def _live_bytes_worker(rank, n, path, bound):
    """Tensors the load makes (outputs and staging) are counted while alive;
    the consumer checks each tensor, then drops it. Returns (peak live bytes
    seen at a yield, {name: ok})."""
    import weakref
    import torch
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _frameworks
    live = [0]

    def counted(make):
        def wrapper(*a, **k):
            t = make(*a, **k)
            size = t.numel() * t.element_size()
            live[0] += size
            weakref.finalize(t, lambda: live.__setitem__(0, live[0] - size))
            return t
        return wrapper
    _frameworks.Torch.empty = counted(_frameworks.Torch.empty)
    _frameworks.Torch.bytes_buffer = counted(_frameworks.Torch.bytes_buffer)
    peak, got = 0, {}
    options = {} if bound is None else {"max_device_bytes": bound}
    for name, t in us.iter_checkpoint(path, group=dist.group.WORLD, shard=RULES, **options):
        peak = max(peak, live[0])
        got[name] = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        del t
    return peak, got


def test_held_memory_within_max_device_bytes(stream_ckpt):
    path, arrays = stream_ckpt
    res = dist_harness.run(_live_bytes_worker, 3, (path, BOUND), deadline=DEADLINE)
    dims = dc.dims_of(arrays, RULES)
    for rank, r in enumerate(res):
        assert "ok" in r, r
        peak, got = r["ok"]
        assert sorted(got) == sorted(arrays)
        for name, raw in got.items():
            assert raw == dc.expected(arrays, name, dims[name], rank, 3).tobytes(), name
        assert 0 < peak <= BOUND, (rank, peak)
        print(f"rank {rank}: peak {peak} of {BOUND} bytes")


def test_the_bound_is_what_limits_it(stream_ckpt):
    """With the default bound (1 GiB) the whole result is held before the
    first yield: the measurement sees what the bound prevents."""
    path, arrays = stream_ckpt
    res = dist_harness.run(_live_bytes_worker, 3, (path, None), deadline=DEADLINE)
    for r in res:
        assert "ok" in r, r
        assert r["ok"][0] > 1.5 * BOUND, r["ok"][0]


def test_segments_keep_every_rank_within_the_budget(stream_ckpt):
    """The planner's cut, for 1-4 ranks: replaying the walk, no rank holds
    more than the budget of tensors allocated and not yet yielded."""
    from ufile.safetensors import _checkpoint_headers, _dist, _dist_plan, _dist_rules
    from ufile.safetensors import _dist_stream
    headers = _checkpoint_headers(stream_ckpt[0])
    names = {n for h in headers for n in h.tensors}
    for n in (1, 2, 3, 4):
        chunk, slab = _dist.split_staging(BOUND // 2, 4, n)
        plan = _dist_plan.make_plan(headers, _dist_rules.split_dims(headers, RULES),
                                    [names] * n, chunk, slab)
        for rank in range(n):
            order, segs = _dist_stream.segments(plan, rank, BOUND // 2)
            assert len(segs) > 1 and segs[-1].alloc == len(order)
            sizes = {k: _dist_stream.part_bytes(plan.parts[rank][k]) for k in order}
            for a, b in zip([0] + [s.alloc for s in segs], [s.alloc for s in segs]):
                assert sum(sizes[k] for k in order[a:b]) <= BOUND // 2


def _raise_worker(rank, n, path, raise_at):
    """Rank 1 raises at its ``raise_at``-th tensor (0: never); returns its
    outcome and the data collectives this rank issued."""
    import torch.distributed as dist
    from ufile import safetensors as us
    from ufile.safetensors import _dist_exec
    _dist_exec.AGREE_EVERY = 2   # on every rank: statuses pair up
    _dist_exec.GATE_LAG = 2      # each waited for two collectives after it
    issued = [0]
    for fn in ("broadcast", "all_to_all_single"):
        real = getattr(dist, fn)

        def counting(*a, _real=real, **k):
            issued[0] += 1
            return _real(*a, **k)
        setattr(dist, fn, counting)
    count = 0
    try:
        for _name, _t in us.iter_checkpoint(path, group=dist.group.WORLD, shard=RULES,
                                            max_device_bytes=BOUND):
            count += 1
            if rank == 1 and count == raise_at:
                raise KeyError("the consumer's own error")
    except KeyError as exc:
        return f"raised {exc}", issued[0]
    return count, issued[0]


def test_a_consumer_raising_at_a_yield_makes_every_rank_raise(stream_ckpt):
    """The others raise naming rank 1, after a few more collectives (a status
    is waited for two collectives after it), not at the end of the load."""
    full = dist_harness.run(_raise_worker, 3, (stream_ckpt[0], 0), deadline=DEADLINE)
    res = dist_harness.run(_raise_worker, 3, (stream_ckpt[0], 3), deadline=DEADLINE)
    assert res[1].get("ok", [None])[0] == "raised \"the consumer's own error\"", res[1]
    total = full[0]["ok"][1]
    for rank in (0, 2):
        assert res[rank].get("type") == "DistributedLoadError", (rank, res[rank])
        assert "rank 1 stopped before the load completed" in res[rank]["error"]
    issued = res[1]["ok"][1]
    assert issued < total // 2, (issued, total)


def _stop_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    got = []
    for name, _t in us.iter_checkpoint(path, group=dist.group.WORLD, max_device_bytes=BOUND):
        got.append(name)
        if len(got) == 2 + rank:
            break
    return got


def test_every_rank_stopping_early_ends_the_load_everywhere(stream_ckpt):
    res = dist_harness.run(_stop_worker, 3, (stream_ckpt[0],), deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert len(r.get("ok", ())) == 2 + rank, (rank, r)
