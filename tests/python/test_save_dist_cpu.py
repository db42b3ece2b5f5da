# SPDX-License-Identifier: Apache-2.0
"""The collective save over gloo with 1-8 processes: replicas, tensor parallel
(outer and inner dimensions, uneven, empty parts), pipeline-style subsets; the
directory must hold, byte for byte, the checkpoint a single process saves
from the full tensors, with O_DIRECT too. Failures: a write failing on one
rank, ranks passing different rules, a rank exiting mid-save: every live rank
raises DistributedSaveError, none hangs (dist_harness's deadline), and the
previous checkpoint stays."""
from __future__ import annotations

import os

import pytest

import dist_harness
import fs_support
import save_checks
import save_dist_cases as cases
from ufile.safetensors import save_checkpoint
from ufile.safetensors._save_dist_plan import Held, make_save_plan, writes_of

DEADLINE = 180


def _expected(root: str, max_shard_size: int = cases.MAX_SHARD) -> str:
    d = os.path.join(root, f"expected-{max_shard_size}")
    save_checkpoint(cases.full(), d, max_shard_size=max_shard_size)
    return d


def _same_files(got: str, want: str) -> None:
    names = sorted(f for f in os.listdir(want))
    assert sorted(os.listdir(got)) == names
    for f in names:
        assert open(os.path.join(got, f), "rb").read() == \
            open(os.path.join(want, f), "rb").read(), f


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_collective_equals_single_process(io_dir, n):
    root = str(io_dir)
    want = _expected(root)
    scenarios = [("replicas", "replicas", "rep", None), ("tp", "tp", "tp", None),
                 ("pipeline", "pipeline", "pipe", None)]
    if n > 1:
        scenarios += [("fault", "tp", "tp", 1), ("rules", "tp_wrong_rules", "tp", None),
                      ("small_budget", "tp", "tp_budget", None)]
    results = dist_harness.run(cases.worker, n, (root, scenarios), deadline=DEADLINE)
    for r, res in enumerate(results):
        assert "ok" in res, f"rank {r}: {res}"
        got = res["ok"]
        assert got["replicas"] == got["tp"] == got["pipeline"] == "ok", got
        if n > 1:
            assert got["fault"].startswith("DistributedSaveError") and "rank 1" in \
                got["fault"] and "No space left" in got["fault"], got["fault"]
            assert got["rules"].startswith("DistributedSaveError") and "norm" in got["rules"]
    for d in ("rep", "tp", "pipe") + (("tp_budget",) if n > 1 else ()):
        _same_files(os.path.join(root, d), want)  # faults left the tp checkpoint intact
    if n > 1:
        assert all(res["ok"]["small_budget"] == "ok" for res in results)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_collective_direct_writes_every_byte(io_dir, n):
    """direct=True: ranks write their parts with O_DIRECT into the same files,
    parts beginning and ending inside blocks another rank writes too; the
    directory equals a single process's buffered save, byte for byte."""
    fs_support.need_odirect(io_dir)
    root = str(io_dir)
    want = os.path.join(root, "want")
    save_checkpoint(cases.straddling(), want, max_shard_size=cases.DIRECT_SHARD)
    assert len(os.listdir(want)) > 2   # several shards and the index
    results = dist_harness.run(cases.worker_direct, n, (root,), deadline=DEADLINE)
    assert [res.get("ok") for res in results] == ["ok"] * n, results
    _same_files(os.path.join(root, "direct"), want)


def test_timeline_names_each_phase(io_dir, monkeypatch):
    """UFILE_SAVE_TRACE: a timeline a rank and save, in the order the save
    goes: agreed, created, its own bytes and the gathers (interleaved: the
    own bytes are written while the gathers run), all bytes written, the
    flushes, agreed again, committed; each rank starts its own bytes, and
    its flushes, in a different file. Rank 0's writes are slowed: its
    gathers still start before its own bytes are all written."""
    import json
    root = str(io_dir)
    monkeypatch.setenv("UFILE_SAVE_TRACE", os.path.join(root, "trace", "save"))
    label = "tp_sharded_slow"
    results = dist_harness.run(cases.worker, 2, (root, [(label, "tp", "tp", None)]),
                               deadline=DEADLINE)
    assert all(res.get("ok", {}).get(label) == "ok" for res in results), results
    assert sum(f.endswith(".safetensors") for f in os.listdir(os.path.join(root, "tp"))) > 1
    _same_files(os.path.join(root, "tp"), _expected(root, cases.SMALL_SHARD))
    first_files = []
    for rank in (0, 1):
        events = json.load(open(os.path.join(root, "trace", f"save.rank{rank}.1.json")))
        kinds = [e[1] for e in events]
        phase = {"state dicts agreed": 0, "files created": 1, "own bytes written": 2,
                 "gathered": 2, "bytes written": 3, "flushed": 4, "writes agreed": 5,
                 "committed": 6}
        assert set(phase) <= set(kinds), kinds
        steps = [phase[k] for k in kinds if k in phase]
        assert steps == sorted(steps), kinds
        assert [e[0] for e in events] == sorted(e[0] for e in events)
        written = [e[2] for e in events if e[1] == "own bytes written"]
        assert [e[2] for e in events if e[1] == "flushed"] == written   # the same rotation
        first_files.append(written[0])
        if rank == 0:
            assert kinds.index("gathered") < len(kinds) - kinds[::-1].index("own bytes written")
    assert first_files[0] != first_files[1], first_files


def test_rank_exiting_mid_save(io_dir):
    root = str(io_dir)
    want = _expected(root)
    results = dist_harness.run(cases.worker, 3, (root, [("tp", "tp", "tp", None),
                                                        ("exit", "tp", "tp", 2)]),
                               deadline=DEADLINE, pg_timeout=30)
    assert results[2]["type"] == "Exit"
    for r in (0, 1):
        assert "ok" in results[r] or "error" in results[r], results[r]
        if "ok" in results[r]:
            assert results[r]["ok"]["tp"] == "ok"
            assert results[r]["ok"]["exit"] != "ok", results[r]
    snap = save_checks.snapshot(os.path.join(root, "tp"))
    assert snap == save_checks.snapshot(want)


def _decl(shapes: dict, dims: dict) -> dict:
    return {k: Held("F32", s, dims.get(k)) for k, s in shapes.items()}


def test_plan_writes_every_byte_once():
    n = 3
    parts = {"a": [(3, 4), (3, 4), (2, 4)], "b": [(5, 2), (5, 2), (5, 1)]}
    decls = [_decl({"a": parts["a"][r], "b": parts["b"][r], "r": (4,)}, {"a": 0, "b": 1})
             for r in range(n)]
    plan = make_save_plan(decls, 10**9, {"format": "pt"})
    covered = {}
    for r in range(n):
        for fname, pieces in writes_of(plan, r).items():
            for _, _, _, off, size in pieces:
                for b in range(off, off + size):
                    assert (fname, b) not in covered, f"byte {b} written twice"
                    covered[(fname, b)] = r
    total = plan.files[0].total
    assert sorted(b for _, b in covered) == list(range(total))
    kinds = {t.name: t.kind for t in plan.tensors}
    assert kinds == {"a": "parts", "b": "gather", "r": "whole"}


def test_ranks_start_their_own_bytes_in_different_files():
    """Every rank writes into every file (4 files, 4 ranks, parts of each
    tensor): each starts its own bytes, and its flushes, in a file of its own,
    whichever files' headers it writes (the order is the plan's on every rank,
    then rotated by the rank)."""
    from ufile.safetensors._save_dist import _own_chunks
    from ufile.safetensors._save_write import WriteOptions
    n = 4
    decls = [_decl({f"t{i}": (4, 1024) for i in range(8)}, {f"t{i}": 0 for i in range(8)})
             for _ in range(n)]
    plan = make_save_plan(decls, 2 * 16 * 1024 * 4, {"format": "pt"})   # 2 tensors a file
    assert len(plan.files) == n
    assert {f.header_writer for f in plan.files} == set(range(n))
    order = [f.name for f in plan.files]
    state = {f"t{i}": None for i in range(8)}
    firsts = []
    for r in range(n):
        assert list(writes_of(plan, r)) == order
        jobs = _own_chunks(plan, writes_of(plan, r), state, r, WriteOptions())
        firsts.append(jobs[0][0])
    assert sorted(firsts) == sorted(order), firsts


@pytest.mark.parametrize("decls,match", [
    ([{"a": Held("F32", (2,), None)}, {"a": Held("F16", (2,), None)}], "F16"),
    ([{"a": Held("F32", (2,), None)}, {"a": Held("F32", (3,), None)}], "replicated"),
    ([{"a": Held("F32", (2, 2), 0)}, {"a": Held("F32", (2, 2), 1)}], "along"),
    ([{"a": Held("F32", (1, 2), 0)}, {"a": Held("F32", (2, 2), 0)}], "tensor_split"),
    ([{"a": Held("F32", (2, 2), 0)}, {}], "hold no part"),
    ([{"a": Held("F32", (2, 2), 0)}, {"a": Held("F32", (2, 3), 0)}], "differ outside"),
])
def test_plan_refuses_disagreeing_ranks(decls, match):
    with pytest.raises(ValueError, match=match):
        make_save_plan(decls, 10**9, {})


def test_chunk_runs_cover_exactly_the_chunk():
    """The runs UfileStorageWriter writes for a DCP chunk, against numpy."""
    import numpy as np
    from ufile.safetensors._save_dist_plan import chunk_runs
    rng = np.random.RandomState(0)
    for _ in range(300):
        nd = rng.randint(1, 5)
        shape = tuple(int(x) for x in rng.randint(1, 5, size=nd))
        offs = tuple(int(rng.randint(0, s)) for s in shape)
        sizes = tuple(int(rng.randint(0, s - o + 1)) for s, o in zip(shape, offs))
        full = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
        sl = tuple(slice(o, o + z) for o, z in zip(offs, sizes))
        chunk = np.ascontiguousarray(full[sl]).view(np.uint8).reshape(-1)
        out = np.zeros(full.nbytes, np.uint8)
        hit = np.zeros(full.nbytes, bool)
        for fo, so, n in chunk_runs(shape, offs, sizes, 4):
            assert not hit[fo:fo + n].any()
            out[fo:fo + n], hit[fo:fo + n] = chunk[so:so + n], True
        inside = np.zeros(shape, bool)
        inside[sl] = True
        assert (hit == np.repeat(inside.reshape(-1), 4)).all(), (shape, offs, sizes)
        assert (out.view(np.int32)[inside.reshape(-1)] == full[sl].reshape(-1)).all()
