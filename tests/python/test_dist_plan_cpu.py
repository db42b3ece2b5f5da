# SPDX-License-Identifier: Apache-2.0
"""The collective load's planner alone (no process group): the plan is carried
out here in numpy over made-up files, and every rank's tensors must equal
torch.tensor_split's parts of the written bytes; each needed byte is read
exactly once; reads balance over ranks by bytes, not by files; the number
of collectives per load."""
from __future__ import annotations

import numpy as np
import pytest

import plan_sim
from ufile.safetensors._dist_plan import AllToAll, Broadcast, make_plan, split_sizes
from ufile.safetensors._dist_rules import shard_from_tp_plan, split_dims
from ufile.safetensors._format import SafetensorError

NP = plan_sim.NP
_headers, _execute = plan_sim.headers, plan_sim.execute


def _check(files, dims_rule, wanted_fn, ranks, chunk, slab=None, readers=None):
    headers, blobs = _headers(files)
    dims = split_dims(headers, dims_rule)
    names = [n for h in headers for n in h.tensors]
    wanted = [{x for x in names if wanted_fn(r, x)} for r in range(ranks)]
    plan = make_plan(headers, dims, wanted, chunk, chunk if slab is None else slab,
                     readers=readers)
    out, reads = _execute(plan, headers, blobs)
    for fi, h in enumerate(headers):
        for name, info in h.tensors.items():
            full = blobs[fi][h.data_start + info.begin:h.data_start + info.end] \
                .view(NP[info.dtype]).reshape(info.shape)
            for r in range(ranks):
                if name not in wanted[r]:
                    assert name not in out[r]
                    continue
                want = full if dims[name] is None else \
                    np.array_split(full, ranks, axis=dims[name])[r]
                assert out[r][name].shape == want.shape, (r, name)
                assert out[r][name].tobytes() == want.tobytes(), (r, name)
            needed = any(name in w for w in wanted)
            span = reads[fi][h.data_start + info.begin:h.data_start + info.end]
            if needed and dims[name] is None:
                assert (span == 1).all(), f"{name}: bytes read {set(span.tolist())} times"
            assert span.max(initial=0) <= 1, f"{name}: a byte read twice"
            if not needed:
                assert span.max(initial=0) == 0, f"{name}: read though no rank needs it"
    return plan


LLAMA_LIKE = [
    [("embed", "BF16", (101, 16)), ("l0.norm", "F32", (16,)), ("l0.q", "BF16", (24, 16)),
     ("l0.o", "BF16", (16, 24)), ("l0.up", "BF16", (40, 16))],
    [("l0.down", "BF16", (16, 40)), ("l1.norm", "F32", (16,)), ("l1.q", "BF16", (24, 16)),
     ("l1.o", "BF16", (16, 24))],
    [("cube", "F16", (3, 7, 5)), ("empty", "F32", (0, 3)), ("scalar", "I64", ()),
     ("odd", "U8", (5,)), ("head", "BF16", (101, 16))],
]
TP = {r"(q|up|embed|head)$": 0, r"(o|down)$": 1, r"^cube$": 2}


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("chunk,slab", [(4096, 64), (3 * 4096, 200), (1 << 20, 1 << 20)])
def test_replicas_and_tensor_parallel_cover_every_part(ranks, chunk, slab):
    _check(LLAMA_LIKE, None, lambda r, n: True, ranks, chunk, slab)
    _check(LLAMA_LIKE, TP, lambda r, n: True, ranks, chunk, slab)


@pytest.mark.parametrize("ranks", [2, 3, 4, 8])
def test_subsets_and_ranks_that_need_nothing(ranks):
    experts = [[(f"e{i}.w", "F32", (8, 9)) for i in range(ranks)] + [("shared", "F32", (33,))]]
    plan = _check(experts, None, lambda r, n: n == "shared" or n == f"e{r}.w", ranks, 8192)
    assert [type(op) for op in plan.ops] == [Broadcast]   # only "shared" is fanned out
    assert all(len(plan.direct[r]) == 1 for r in range(ranks))  # own expert read directly
    _check(LLAMA_LIKE, TP, lambda r, n: r != ranks - 1, ranks, 8192)  # last rank: nothing
    _check(LLAMA_LIKE, TP, lambda r, n: (n.startswith("l0")) == (r % 2 == 0), ranks, 8192)


@pytest.mark.parametrize("ranks,readers", [(2, (0,)), (4, (0, 1)), (4, (2, 3)), (5, (1, 3)),
                                           (8, (0, 1, 2, 3))])
@pytest.mark.parametrize("chunk,slab", [(4096, 64), (1 << 20, 1 << 20)])
def test_ranks_whose_host_lacks_the_files_read_nothing(ranks, readers, chunk, slab):
    """Only ``readers`` read (the simulator asserts it); the others receive
    every part they want, each byte read once, reads balanced over readers."""
    for rule in (None, TP):
        plan = _check(LLAMA_LIKE, rule, lambda r, n: True, ranks, chunk, slab, readers)
        got = [plan.read_bytes(r) for r in range(ranks)]
        assert all(got[r] == 0 for r in range(ranks) if r not in readers), got
        mine = [got[r] for r in readers]
        assert max(mine) - min(mine) <= max(chunk, 1024), (rule, got)
    _check(LLAMA_LIKE, TP, lambda r, n: r not in readers, ranks, 8192, readers=readers)


def test_spans_shortcuts_equal_the_sweep():
    """The planner's shortcuts for equal ranges (replicas) and disjoint ones
    (dimension-0 splits) give what the general sweep gives, on random ranges
    of every kind: equal, disjoint, touching, nested, overlapping."""
    from ufile.safetensors._dist_plan import _spans, _sweep
    rng = np.random.RandomState(3)
    kinds = {"equal": 0, "disjoint": 0, "other": 0}
    for _ in range(3000):
        n = rng.randint(1, 7)
        if rng.rand() < 0.2:
            lo = int(rng.randint(0, 50))
            ranges = [(lo, lo + int(rng.randint(1, 20)))] * n
        elif rng.rand() < 0.4:
            cuts = sorted(rng.choice(60, size=2 * n, replace=False).tolist())
            ranges = [(cuts[2 * i], cuts[2 * i + 1] + (rng.rand() < 0.5)) for i in range(n)]
            ranges = [(a, min(b, cuts[2 * i + 2]) if i + 1 < n else b)
                      for i, (a, b) in enumerate(ranges)]
            rng.shuffle(ranges)
        else:
            ranges = [(a, a + int(rng.randint(1, 15)))
                      for a in rng.randint(0, 30, size=n).tolist()]
        got = _spans(ranges)
        assert got == _sweep(ranges, sorted(range(n), key=lambda i: ranges[i][0])), ranges
        kind = "equal" if all(r == ranges[0] for r in ranges) else \
            "disjoint" if len(got) == n and all(len(c) == 1 for _, _, c in got) else "other"
        kinds[kind] += 1
    assert min(kinds.values()) > 100, kinds


def test_uneven_split_follows_tensor_split():
    assert split_sizes(10, 4) == [3, 3, 2, 2]
    assert split_sizes(2, 4) == [1, 1, 0, 0]
    assert split_sizes(0, 3) == [0, 0, 0]


def _balance(files, ranks, rules=None):
    headers, _ = _headers(files)
    names = {n for h in headers for n in h.tensors}
    plan = make_plan(headers, split_dims(headers, rules), [names] * ranks, 1 << 20, 1 << 18)
    got = [plan.read_bytes(r) for r in range(ranks)]
    total = sum(h.file_size - h.data_start for h in headers)
    assert sum(got) == total
    return got, total, plan


def test_four_shards_on_three_ranks_balance_by_bytes():
    shard = [[(f"s{f}.t{i}", "F32", (1000, 37)) for i in range(7)] for f in range(4)]
    got, total, _ = _balance(shard, 3)
    assert max(got) - min(got) <= 148000, got   # at most one tensor's bytes apart


def test_one_huge_file_spreads_over_every_rank():
    got, total, plan = _balance([[("huge", "U8", (64 << 20,))]], 8)
    assert all(abs(g - total / 8) <= (1 << 20) for g in got), got
    assert len(plan.ops) == 65   # a broadcast a chunk, cut at 1 MiB file offsets (data at 64)


def test_inner_splits_balance_and_land_in_place():
    """Row-parallel weights: every rank reads about 1/n of the rows and
    receives only its columns."""
    files = [[(f"l{i}.o", "BF16", (512, 96)) for i in range(4)]]
    got, total, plan = _balance(files, 3, {r"\.o$": 1})
    assert max(got) - min(got) <= 2 * 192 * 4, got
    assert all(isinstance(op, AllToAll) for op in plan.ops)
    for op in plan.ops:
        assert [op.recv_bytes(k) for k in range(3)] == [(op.o1 - op.o0) * 64] * 3


def test_collectives_per_load():
    """Broadcasts: one a chunk of each shared tensor; all-to-alls: one a run of
    rows; direct reads need none."""
    headers, _ = _headers(LLAMA_LIKE)
    names = {n for h in headers for n in h.tensors}
    plan = make_plan(headers, split_dims(headers, TP), [names] * 4, 1 << 20, 1 << 20)
    kinds = sorted((type(op).__name__, op.name) for op in plan.ops)
    assert kinds == sorted([("AllToAll", "cube"), ("AllToAll", "l0.down"),
                            ("AllToAll", "l0.o"), ("AllToAll", "l1.o"),
                            ("Broadcast", "l0.norm"), ("Broadcast", "l1.norm"),
                            ("Broadcast", "odd"), ("Broadcast", "scalar")])
    order = [plan.position(op) for op in plan.ops]
    assert order == sorted(order), "collectives follow the files' order"


def test_staging_stays_within_its_bound():
    headers, _ = _headers(LLAMA_LIKE)
    names = {n for h in headers for n in h.tensors}
    for ranks in (2, 4, 8):
        plan = make_plan(headers, split_dims(headers, TP), [names] * ranks, 4096, 128)
        assert plan.chunk <= 4096 and plan.recv <= 4096
        assert plan.slab <= 128   # every row of these tensors is at most 80 bytes


def test_a_rule_naming_a_missing_dimension_names_the_tensor():
    headers, _ = _headers(LLAMA_LIKE)
    with pytest.raises(SafetensorError, match=r"'l0\.norm'.*dimension 1"):
        split_dims(headers, {r"norm$": 1})


def test_tp_plan_adapter():
    shard = shard_from_tp_plan({"layers.*.self_attn.q_proj": "colwise",
                                "layers.*.self_attn.o_proj": "rowwise",
                                "embed_tokens": "embedding_rowwise", "norm": "replicate"},
                               prefix="model.")
    headers, _ = _headers([[("model.layers.3.self_attn.q_proj.weight", "BF16", (8, 4)),
                            ("model.layers.3.self_attn.o_proj.weight", "BF16", (4, 8)),
                            ("model.layers.3.self_attn.o_proj.bias", "BF16", (4,)),
                            ("model.embed_tokens.weight", "BF16", (9, 4)),
                            ("model.norm.weight", "BF16", (4,))]])
    dims = split_dims(headers, shard)
    assert dims == {"model.layers.3.self_attn.q_proj.weight": 0,
                    "model.layers.3.self_attn.o_proj.weight": 1,
                    "model.layers.3.self_attn.o_proj.bias": None,
                    "model.embed_tokens.weight": 0, "model.norm.weight": None}
    with pytest.raises(ValueError, match="unknown style"):
        shard_from_tp_plan({"x": "diagonal"})
    with pytest.raises(ValueError, match="packed"):
        shard_from_tp_plan({"layers.*.mlp.gate_up_proj": "packed_colwise"})
    assert shard_from_tp_plan({"lm_head": "colwise_gather_output"}) == \
        {r"(^|\.)lm_head\.weight$": 0, r"(^|\.)lm_head\.bias$": 0}


def _state_bytes(count: int, select) -> tuple:
    """(pickled bytes of one rank's state in the exchange before any read, of
    its selected names as a list) for a checkpoint of ``count`` tensors; every
    rank's state has the same size, and each rank receives every rank's."""
    import pickle
    import types
    from ufile.safetensors import _dist
    headers, _ = _headers([[(f"model.layers.{i // 9}.mlp.experts.{i % 9}.w", "BF16", (2, 2))
                            for i in range(count)]])
    opts = types.SimpleNamespace(register_buffers=False, max_device_bytes=None,
                                 staging_buffers=None)
    state, _ = _dist._local_state(lambda: headers, types.SimpleNamespace(name="pt"), None,
                                  select, "cuda:0", opts)
    assert state["error"] is None, state
    names = sorted(n for n in headers[0].tensors if select is None or select(n))
    return len(pickle.dumps(state)), len(pickle.dumps(names))


def test_the_exchange_grows_with_tensors_not_names():
    """90,000 tensors: a rank's state is digests and, when it selects a
    subset, one bit a tensor; received per rank: ranks x that."""
    count = 90_000
    every, _ = _state_bytes(count, None)
    experts, names = _state_bytes(count, lambda n: n.endswith(".3.w"))
    for ranks in (8, 64):
        print(f"{ranks} ranks receive {ranks * every} bytes (all selected), "
              f"{ranks * experts} (a ninth each; as name lists {ranks * names})")
    assert every <= 600
    assert experts <= count // 8 + 600 < names // 20
