# SPDX-License-Identifier: Apache-2.0
"""Outputs on a device mesh described as plain data (nested lists of global
ranks, one placement a mesh dimension): 1-D and 2-D meshes, uneven parts equal
to what DTensor's distribute_tensor gives (torch.chunk's convention) or
torch.tensor_split's when asked, each byte read once across the whole world;
the planner alone on random and overlapping boxes; bad meshes and placements
raise on every rank."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import dist_cases as dc
import dist_harness
import mesh_cases as mc
import plan_sim
from fs_support import module_dir
from ufile.safetensors import _dist, _dist_box, _dist_staging
from ufile.safetensors._dist_mesh import MeshShard, layout
from ufile.safetensors._dist_plan import AllToAll, Want, make_plan

DEADLINE = 120


@pytest.mark.parametrize("length", [0, 1, 2, 3, 5, 7, 10, 16, 37])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_chunk_convention_is_torch_chunk(length, n):
    t = torch.arange(length)
    assert _dist_box.chunk_sizes(length, n) == [len(p) for p in mc.chunks(t, n, 0)]
    assert _dist_box.tensor_split_sizes(length, n) == \
        [len(p) for p in torch.tensor_split(t, n)]
    assert _dist_box.chunk_sizes(10, 4) == [3, 3, 3, 1]


FILES = [[("emb", "F32", (37, 8)), ("q", "F16", (10, 8)), ("o", "F16", (8, 10)),
          ("norm", "F32", (8,)), ("experts", "F32", (6, 5, 7))],
         [("head", "U8", (37, 9)), ("scalar", "I64", ()), ("empty", "F32", (0, 3))]]
PLACEMENTS = {r"^emb$": (0, None), r"^q$": (None, 0), r"^o$": (None, 1),
              r"^experts$": (0, 2), r"^head$": (1, 1)}


def _simulate(files, mesh, placements, split, chunk=4096, slab=256):
    headers, blobs = plan_sim.headers(files)
    ranks = sorted(r for row in np.array(mesh).reshape(-1).tolist() for r in [row])
    shard = MeshShard(mesh, placements, None, split, ranks=ranks)
    dims = shard.split_dims(headers)
    names = {n for h in headers for n in h.tensors}
    plan = make_plan(headers, dims, [names] * len(ranks), chunk, slab)
    out, reads = plan_sim.execute(plan, headers, blobs)
    shape = np.array(mesh).shape
    for fi, h in enumerate(headers):
        for name, info in h.tensors.items():
            full = torch.from_numpy(blobs[fi][h.data_start + info.begin:h.data_start + info.end]
                                    .view(plan_sim.NP[info.dtype]).reshape(info.shape).copy())
            pl = dims[name].placements if dims[name] is not None else (None,) * len(shape)
            for r in ranks:
                want = mc.local_part(full, shape, mc.coordinate(mesh, r), pl, split)
                assert out[r][name].shape == tuple(want.shape), (r, name)
                assert out[r][name].tobytes() == want.numpy().tobytes(), (r, name)
            span = reads[fi][h.data_start + info.begin:h.data_start + info.end]
            assert (span == 1).all(), f"{name}: bytes read {sorted(set(span.tolist()))} times"
    return plan


@pytest.mark.parametrize("mesh", [[[0, 1], [2, 3]], [[0, 1, 2], [3, 4, 5]], [[0], [1]],
                                  [[0, 2], [1, 3]]])
@pytest.mark.parametrize("split", ["chunk", "tensor_split"])
def test_2d_mesh_parts_and_each_byte_read_once(mesh, split):
    _simulate(FILES, mesh, PLACEMENTS, split)


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5, 8])
def test_1d_mesh_uneven_chunks(ranks):
    _simulate(FILES, list(range(ranks)), {r"^emb$": (0,), r"^o$": (1,), r"^head$": (-1,),
                                           r"^experts$": (1,)}, "chunk")


def test_2d_mesh_replicas_share_reads():
    """TP x DP: the two replicas of each TP part read half of it each, and
    no rank reads more than its share (+ a chunk)."""
    plan = _simulate([[("w", "F32", (64, 64))]], [[0, 1], [2, 3]], {"w": (None, 0)}, "chunk",
                     chunk=4096)
    got = [plan.read_bytes(r) for r in range(4)]
    assert sum(got) == 64 * 64 * 4 and max(got) <= 64 * 64 * 4 // 4 + 4096, got


def test_random_overlapping_boxes():
    """Any boxes of 2-D and 1-D tensors, overlapping or not, several per
    rank: each part equals the source box, and a byte wanted under one part
    key is read once."""
    rng = np.random.default_rng(7)
    files = [[("a", "F32", (23, 17)), ("b", "U8", (40,)), ("c", "F16", (9, 33))]]
    headers, blobs = plan_sim.headers(files)
    for trial in range(60):
        ranks = int(rng.integers(1, 6))
        wants = []
        for r in range(ranks):
            mine = {}
            for h in headers:
                for name, info in h.tensors.items():
                    if rng.random() < 0.8:
                        box = tuple(tuple(sorted(rng.integers(0, s + 1, 2).tolist()))
                                    for s in info.shape)
                        mine[name] = Want(name, box)
            wants.append(mine)
        plan = make_plan(headers, {}, [], 4096 * int(rng.integers(1, 3)),
                         int(rng.integers(16, 400)), wants=wants)
        out, reads = plan_sim.execute(plan, headers, blobs)
        for r, mine in enumerate(wants):
            for key, w in mine.items():
                info = headers[0].tensors[w.name]
                full = blobs[0][headers[0].data_start + info.begin:
                                headers[0].data_start + info.end] \
                    .view(plan_sim.NP[info.dtype]).reshape(info.shape)
                want = full[tuple(slice(a, b) for a, b in w.box)]
                assert out[r][key].tobytes() == np.ascontiguousarray(want).tobytes(), \
                    (trial, r, key, w.box)
        assert max(int(x.max(initial=0)) for x in reads) <= 1, trial


@pytest.mark.parametrize("mesh", [[0, 1, 2, 3], [[0, 1], [2, 3]], [[0, 2], [1, 3]]])
@pytest.mark.parametrize("total", [256 << 10, 1 << 20])
def test_staging_stays_within_max_device_bytes(mesh, total):
    """What each rank allocates for the plan (CUDA's reduce-scatter sizes
    included) fits ``max_device_bytes``, also where ranks share the parts
    of an inner split (a 2-D mesh) and each part is wider than 1/n."""
    files = [[("emb", "BF16", (512, 256)), ("o", "BF16", (256, 512)),
              ("down", "BF16", (256, 1024)), ("norm", "F32", (256,))]]
    headers, blobs = plan_sim.headers(files)
    ranks = [0, 1, 2, 3]
    dim = 0 if np.array(mesh).ndim == 1 else 1
    inner = tuple(None if m != dim else 1 for m in range(np.array(mesh).ndim))
    outer = tuple(None if m != dim else 0 for m in range(np.array(mesh).ndim))
    shard = MeshShard(mesh, {r"^(o|down)$": inner, r"^emb$": outer}, None, "chunk",
                      ranks=ranks)
    depth = _dist.DEFAULT_STAGING_BUFFERS
    chunk, slab = _dist_staging.split_staging(total, depth, len(ranks))
    dims = shard.split_dims(headers)
    plan = make_plan(headers, dims, [{n for h in headers for n in h.tensors}] * len(ranks),
                     chunk, slab)
    assert any(isinstance(op, AllToAll) for op in plan.ops)
    for r in ranks:
        for cuda in (True, False):
            used = _dist_staging.staging(plan, r, depth, cuda).nbytes(plan, ring=not cuda)
            assert used <= total - total // 32, (r, cuda, used, total)
    out, reads = plan_sim.execute(plan, headers, blobs)
    assert max(int(x.max(initial=0)) for x in reads) <= 1


def test_a_part_that_is_no_range_of_rows_is_refused():
    headers, _ = plan_sim.headers([[("t", "F32", (3, 7, 5))]])
    wants = [{"t": Want("t", ((0, 3), (2, 4), (1, 3)))}, {"t": Want("t", ((0, 3), (0, 7), (0, 5)))}]
    with pytest.raises(Exception, match=r"not one range.*ask for it in pieces"):
        make_plan(headers, {}, [], 4096, 4096, wants=wants)


@pytest.mark.parametrize("mesh,match", [
    ([[0, 1], [2]], "not rectangular"), ([[0, 1], [1, 2]], "appears twice"),
    ([[0, 1], [2, 5]], r"missing \[3\], not in the group \[5\]"), (3, "is a rank"),
])
def test_bad_meshes(mesh, match):
    with pytest.raises(ValueError, match=match):
        layout(mesh, [0, 1, 2, 3])


# -- over gloo: 4 processes as 2 x 2, 3 as 1-D --

@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "mesh") as root:
        yield os.path.join(root, "ckpt"), dc.write_checkpoint(os.path.join(root, "ckpt"))


GLOO_PLACEMENTS = {r"\.q\.weight$": (None, 0), r"\.o\.weight$": (None, 1),
                   r"^embed": (0, None), r"^cube$": (0, 2), r"^big$": (1, 1),
                   r"lm_head": (0, 0), r"experts\.[01]": (0, None)}


def _check_world(res, arrays, mesh, placements, split):
    shape = np.array(mesh).shape
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        got, shapes, _ = r["ok"]
        assert sorted(got) == sorted(arrays)
        for name, a in arrays.items():
            pl = next((p for pat, p in placements.items()
                       if __import__("re").search(pat, name)), (None,) * len(shape))
            want = mc.local_part(torch.from_numpy(a.copy()), shape, mc.coordinate(mesh, rank),
                                 pl, split)
            assert shapes[name] == tuple(want.shape), (rank, name)
            assert got[name] == want.contiguous().numpy().tobytes(), (rank, name)
    total = sum(a.nbytes for a in arrays.values())
    assert sum(r["ok"][2] for r in res) == total, "each byte read once across the world"


def test_2x2_mesh_over_gloo(ckpt):
    mesh = [[0, 1], [2, 3]]
    res = dist_harness.run(mc.mesh_worker, 4, (ckpt[0], mesh, GLOO_PLACEMENTS, "chunk", None),
                           deadline=DEADLINE)
    _check_world(res, ckpt[1], mesh, GLOO_PLACEMENTS, "chunk")


def test_no_buffer_receives_two_collectives_in_flight(ckpt):
    """Ranks that keep none of a broadcast receive into scratch memory; with
    collectives that complete only when waited for, no buffer is the target
    of two at once (it was: gloo then corrupted a keeper's bytes)."""
    mesh = [[0, 1], [2, 3]]
    res = dist_harness.run(mc.mesh_worker_on_slow_network, 4,
                           (ckpt[0], mesh, GLOO_PLACEMENTS, "chunk"), deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"][1] == [], f"rank {rank}: {r['ok'][1][:5]}"
    _check_world([{"ok": r["ok"][0]} for r in res], ckpt[1], mesh, GLOO_PLACEMENTS, "chunk")


@pytest.mark.parametrize("split", ["chunk", "tensor_split"])
def test_1d_mesh_over_gloo(ckpt, split):
    placements = {r"\.q\.weight$": (0,), r"\.o\.weight$": (1,), r"^embed": (0,),
                  r"^big$": (-1,), r"^cube$": (2,)}
    res = dist_harness.run(mc.mesh_worker, 3, (ckpt[0], [0, 1, 2], placements, split, None),
                           deadline=DEADLINE)
    _check_world(res, ckpt[1], [0, 1, 2], placements, split)


@pytest.mark.parametrize("placements,fault,words", [
    (GLOO_PLACEMENTS, "mesh_missing_rank", ["rank 2", "appears twice"]),
    ({r"^scalar$": (0, None)}, None, ["'scalar'", "not one of its dimensions"]),
    ({r"^nothing$": (0, None)}, None, ["pattern '^nothing$' matches no tensor"]),
    ({r"\.q\.weight$": (0,)}, None, ["one placement", "2 dimensions"]),
])
def test_bad_mesh_or_placements_raise_on_every_rank(ckpt, placements, fault, words):
    res = dist_harness.run(mc.mesh_worker, 4, (ckpt[0], [[0, 1], [2, 3]], placements, "chunk",
                                               fault), deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert r.get("type") == "DistributedLoadError", (rank, r)
        for w in words:
            assert w in r["error"], (w, r["error"])
