# SPDX-License-Identifier: Apache-2.0
"""load_into: a checkpoint loaded into tensors that exist, alone and over gloo.
Plain, fused (qkv, gate_up), padded (vocabulary), renamed, cast and strided
targets; bytes land in the targets themselves (no new tensor where a target
is contiguous and of the checkpoint's dtype); each byte read once across the
group; bad targets raise precisely, and on every rank."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch

import dist_cases as dc
import dist_harness
import load_into_cases as lc
from fs_support import module_dir
from ufile import safetensors as us
from ufile.safetensors import DistributedLoadError, _frameworks

DEADLINE = 120


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "into") as root:
        yield os.path.join(root, "llama"), lc.write(os.path.join(root, "llama")), \
            os.path.join(root, "table"), dc.write_checkpoint(os.path.join(root, "table"))


def _torch(a: np.ndarray) -> torch.Tensor:
    return torch.empty(a.shape, dtype=torch.from_numpy(a.reshape(-1)[:0].copy()).dtype)


def _new_tensors(monkeypatch) -> list:
    made: list = []
    real = _frameworks.Torch.empty

    def counting(self, info, *a, **k):
        made.append(info.name)
        return real(self, info, *a, **k)
    monkeypatch.setattr(_frameworks.Torch, "empty", counting)
    return made


def test_plain_targets_land_in_place(ckpt, monkeypatch):
    _, _, path, arrays = ckpt
    targets = {n: _torch(a) for n, a in arrays.items()}
    pointers = {n: t.data_ptr() for n, t in targets.items()}
    made = _new_tensors(monkeypatch)
    loaded = us.load_into(path, targets)
    assert sorted(loaded) == sorted(arrays)
    for n, a in arrays.items():
        assert targets[n].numpy().tobytes() == a.tobytes(), n
        assert targets[n].data_ptr() == pointers[n], n
    assert made == [], f"load_into made new tensors for {made}"


@pytest.mark.parametrize("n", [1, 2, 4])
def test_fused_padded_renamed_cast_on_one_process(ckpt, monkeypatch, n):
    """Every rank's parameters of an n-way tensor-parallel model, loaded one
    rank after the other without a group: the targets alone say what to read."""
    path, arrays = ckpt[0], ckpt[1]
    for rank in range(n):
        params = lc.model(torch, rank, n, "cpu")
        made = _new_tensors(monkeypatch)
        loaded = us.load_into(path, lc.targets(params, rank, n), rename=lc.rename, cast=True)
        assert "model.rotary_emb.inv_freq" not in loaded
        assert lc.differences(params, lc.expected(arrays, rank, n)) == []
        assert made == []   # the F16 norms are widened to float32 in place


def test_rename_mapping_and_skipped_tensors_are_not_read(ckpt):
    path, arrays = ckpt[2], ckpt[3]
    out = torch.empty(10, 8)
    with dc.recorded_reads() as reads:
        assert us.load_into(path, {"q": out}, rename={"layers.0.q.weight": "q"}) == \
            ["layers.0.q.weight"]
    assert out.numpy().tobytes() == arrays["layers.0.q.weight"].tobytes()
    assert sum(p.size for p in reads) == out.numel() * 4


def test_strided_destination_and_inner_source_slices(ckpt):
    path, arrays = ckpt[2], ckpt[3]
    wide = torch.zeros(8, 12, dtype=torch.float64)            # columns 2..9 of a wider one
    cube = torch.zeros(3, 2, 5, dtype=torch.int16)
    tied, first = torch.zeros(37, 8), torch.zeros(1, 8)      # one tensor, two destinations
    us.load_into(path, {"lm_head.weight": [(wide, (slice(None), slice(2, 10)),
                                            (slice(0, 8),))],
                        "cube": [(cube, None, (slice(None), slice(2, 4)))],
                        "embed.weight": [(tied, None, None), (first, None, (slice(0, 1),))]},
                 cast=True)
    assert np.array_equal(wide[:, 2:10].numpy(), arrays["lm_head.weight"][:8])
    assert not wide[:, :2].any() and not wide[:, 10:].any()
    assert cube.numpy().tobytes() == arrays["cube"][:, 2:4].tobytes()
    assert tied.numpy().tobytes() == arrays["embed.weight"].tobytes()
    assert first.numpy().tobytes() == arrays["embed.weight"][:1].tobytes()


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_casts_widen_in_place_and_narrow_through_a_temporary(ckpt, monkeypatch, chunk):
    from ufile.safetensors import _load_into
    monkeypatch.setattr(_load_into, "CAST_CHUNK", chunk)
    path, arrays = ckpt[2], ckpt[3]
    wide = {"big": torch.int32, "cube": torch.float32, "layers.0.norm": torch.bfloat16,
            "odd.bytes": torch.float64, "scalar": torch.float64}
    targets = {n: torch.empty(arrays[n].shape, dtype=dt) for n, dt in wide.items()}
    targets["layers.0.q.weight"] = torch.empty(10, 8, dtype=torch.float16)
    made = _new_tensors(monkeypatch)
    us.load_into(path, targets, cast=True)
    assert made == ["layers.0.q.weight"]   # narrower: the F32 bytes do not fit in place
    for n, t in targets.items():
        want = torch.from_numpy(arrays[n].copy()).to(t.dtype)
        assert torch.equal(t, want), n


@pytest.mark.parametrize("targets,cast,strict,match", [
    (lambda: {"layers.0.q.weight": torch.empty(10, 9)}, False, True,
     r"'layers\.0\.q\.weight'.*destination is \[10, 9\].*source part \[10, 8\]"),
    (lambda: {"layers.0.q.weight": torch.empty(10, 8, dtype=torch.float16)}, False, True,
     r"holds F32, the destination is torch\.float16; pass cast=True"),
    (lambda: {"nope": torch.empty(1)}, False, True, r"1 targets have no tensor.*'nope'"),
    (lambda: {"layers.0.q.weight": [(torch.empty(10, 8), (slice(0, 10, 2),), None)]},
     False, True, r"destination slices .* step 1"),
    (lambda: {"layers.0.q.weight": [(torch.empty(10, 8), None, (slice(0, 20),) * 3)]},
     False, True, r"source slices .* at most 2"),
    (lambda: {"layers.0.q.weight": [torch.empty(10, 8)]}, False, True,
     r"each entry must be \(destination tensor"),
    (lambda: {"layers.0.q.weight": "weights"}, False, True, r"is a str, not a tensor"),
])
def test_bad_targets_raise_precisely(ckpt, targets, cast, strict, match):
    with pytest.raises((ValueError, TypeError), match=match):
        us.load_into(ckpt[2], targets(), cast=cast, strict=strict)


def test_not_strict_skips_missing_targets_and_bad_rename(ckpt):
    out = torch.empty(10, 8)
    assert us.load_into(ckpt[2], {"layers.0.q.weight": out, "x": torch.empty(1)},
                        strict=False) == ["layers.0.q.weight"]
    with pytest.raises(TypeError, match="rename must be a mapping or a callable"):
        us.load_into(ckpt[2], {"layers.0.q.weight": out}, rename=3)


@pytest.mark.parametrize("n", [2, 4])
def test_tensor_parallel_over_gloo_reads_each_byte_once(ckpt, n):
    path, arrays = ckpt[0], ckpt[1]
    res = dist_harness.run(lc.tp_worker, n, (path, arrays, "cpu", None), deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"]["differ"] == [], (rank, r["ok"])
        assert r["ok"]["moved"] == []
    wanted = sum(a.nbytes for k, a in arrays.items() if not k.endswith("inv_freq"))
    assert sum(r["ok"]["read"] for r in res) == wanted   # once across the group


@pytest.mark.parametrize("cast", [False, True])
def test_parts_partly_shared_are_complete_when_copied(ckpt, cast):
    """Rows [0, 6) on rank 0, [4, 10) on rank 1: each part is read partly by
    its own rank alone and partly by one of them for both (broadcast); staged
    destinations (strided; a cast) get every byte, though rank 0's own reads
    end after the shared bytes are agreed."""
    path, arrays = ckpt[2], ckpt[3]
    wants = {"layers.0.q.weight": (8, [(0, 6), (4, 10)])}
    res = dist_harness.run(lc.overlap_worker, 2, (path, wants, cast, [0.3, 0.0]),
                           deadline=DEADLINE)
    lc.check_overlap(res, arrays, wants, cast)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_overlapping_rows_on_three_ranks(ckpt, seed):
    """Random row ranges of four matrices in four files on 3 ranks (ranges
    that may be equal, nested, overlap in part or lie apart); reads slowed
    unevenly: every staged destination gets exactly its rows."""
    path, arrays = ckpt[2], ckpt[3]
    wants = lc.random_rows(arrays, ("embed.weight", "layers.0.q.weight", "layers.0.o.weight",
                                    "lm_head.weight"), 3, seed)
    cast = bool(seed % 2)
    res = dist_harness.run(lc.overlap_worker, 3, (path, wants, cast, [0.0, 0.05, 0.1]),
                           deadline=DEADLINE)
    lc.check_overlap(res, arrays, wants, cast)


@pytest.mark.parametrize("fault,words", [
    ("bad_shape", ["'model.norm.weight'", "destination is [9]"]),
    ("bad_targets", ["targets must map checkpoint names to tensors, not list"]),
])
def test_a_bad_target_on_one_rank_makes_every_rank_raise(ckpt, fault, words):
    res = dist_harness.run(lc.tp_worker, 3, (ckpt[0], ckpt[1], "cpu", fault),
                           deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert r.get("type") == "DistributedLoadError", (rank, r)
        for w in ["rank 1", "of 3 ranks"] + words:
            assert w in r["error"], (w, r["error"])


def test_load_into_raises_distributed_error_type():
    assert issubclass(DistributedLoadError, us.SafetensorError)


def _state_bytes(count: int, rank: int, ranks: int) -> int:
    """Pickled bytes of one rank's state in load_into's exchange for a
    checkpoint of ``count`` tensors, every second one split by rows over the
    ranks (tensor parallel), the others whole."""
    import pickle
    import plan_sim
    from ufile.safetensors import _load_into
    headers, _ = plan_sim.headers([[(f"model.layers.{i // 9}.mlp.experts.{i % 9}.w", "F32",
                                     (ranks * 2, 2)) for i in range(count)]])
    targets = {}
    for i, name in enumerate(headers[0].tensors):
        if i % 2:
            targets[name] = [(torch.empty(2, 2), None, (slice(rank * 2, rank * 2 + 2),))]
        else:
            targets[name] = torch.empty(ranks * 2, 2)
    state, _ = _load_into._local_state(headers, None, targets, None, False, True)
    assert state["error"] is None, state
    return len(pickle.dumps(state))


def test_the_exchange_of_wants_is_compact():
    """90,000 tensors, half split over the ranks: each rank's boxes travel as
    deltas, None for whole tensors, compressed."""
    count = 90_000
    for ranks in (8, 64):
        one = _state_bytes(count, ranks - 1, ranks)
        print(f"{ranks} ranks: {one} bytes a rank, each rank receives {ranks * one}")
        assert one <= count // 4, one


HOSTS = ["node-a", "node-a", "node-b", "node-b"]


def test_two_hosts_each_with_its_copy_read_each_byte_once_per_host(ckpt, tmp_path):
    """4 processes as 2 hosts (UFILE_HOST_ID), each host loading from its own
    copy: each host reads each byte its ranks want once (a row-parallel
    tensor's rows whole), counted."""
    arrays = ckpt[1]
    copy = str(tmp_path / "copy-b")
    shutil.copytree(ckpt[0], copy)
    res = dist_harness.run(lc.hosts_worker, 4, ([ckpt[0], copy], HOSTS, arrays),
                           deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"]["differ"] == [], (rank, r["ok"])
    for host in (0, 1):   # ranks 2 * host and 2 * host + 1
        want = _union_bytes(arrays, [2 * host, 2 * host + 1], 4)
        assert res[2 * host]["ok"]["read"] + res[2 * host + 1]["ok"]["read"] == want, host


def _union_bytes(arrays: dict, ranks: list, n: int) -> int:
    """Bytes of the checkpoint that any of ``ranks`` (of ``n``) loads; the
    rows of a tensor split along an inner dimension are read whole."""
    masks = {k: np.zeros(a.shape, bool) for k, a in arrays.items()}
    for rank in ranks:
        for key, target in lc.targets(lc.model(torch, rank, n, "cpu"), rank, n).items():
            name = "lm_head.weight" if key == "lm_head.weight" else "model." + key
            for _, _, src in (target if isinstance(target, list) else [(None, None, None)]):
                masks[name][src if src is not None else ...] = True
    for k, m in masks.items():
        if m.ndim == 2 and m.any():   # whole rows: o_proj, down_proj
            m[m.any(axis=1)] = True
    return sum(int(m.sum()) * arrays[k].itemsize for k, m in masks.items())


def test_two_hosts_with_different_copies_raise_on_every_rank(ckpt, tmp_path):
    copy = tmp_path / "copy-b"
    shutil.copytree(ckpt[0], copy)
    shard = copy / "model-00002-of-00002.safetensors"
    raw = bytearray(shard.read_bytes())
    raw[-1] ^= 0xFF   # the same headers, other bytes
    shard.write_bytes(bytes(raw))
    res = dist_harness.run(lc.hosts_worker, 4, ([ckpt[0], str(copy)], HOSTS, ckpt[1]),
                           deadline=DEADLINE)
    for rank, r in enumerate(res):
        assert r.get("type") == "DistributedLoadError", (rank, r)
        for w in ("model-00002-of-00002.safetensors", "node-a", "node-b"):
            assert w in r["error"], (w, r["error"])
