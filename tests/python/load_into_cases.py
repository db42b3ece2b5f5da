# SPDX-License-Identifier: Apache-2.0
"""A small Llama-shaped checkpoint and the model-side tensors a tensor-parallel
framework loads it into (fused qkv with KV heads replicated when the group
exceeds them, fused gate_up, a vocabulary padded to a multiple of the group,
row-parallel o and down), shared by the CPU (gloo) and GPU (NCCL) tests of
load_into. Workers count the bytes each rank reads."""
from __future__ import annotations

import os

import numpy as np

import dist_cases as dc
import st_writer

HIDDEN, HEAD, Q_HEADS, KV_HEADS, INTER, VOCAB, PADDED = 8, 2, 4, 1, 8, 10, 12
NP = {"F32": np.float32, "F16": np.float16}


def table() -> list:
    """(file, name, dtype, shape) in file order."""
    layer = [("model.layers.0.input_layernorm.weight", "F16", (HIDDEN,)),
             ("model.layers.0.self_attn.q_proj.weight", "F32", (Q_HEADS * HEAD, HIDDEN)),
             ("model.layers.0.self_attn.k_proj.weight", "F32", (KV_HEADS * HEAD, HIDDEN)),
             ("model.layers.0.self_attn.v_proj.weight", "F32", (KV_HEADS * HEAD, HIDDEN)),
             ("model.layers.0.self_attn.o_proj.weight", "F32", (HIDDEN, Q_HEADS * HEAD)),
             ("model.layers.0.mlp.gate_proj.weight", "F32", (INTER, HIDDEN)),
             ("model.layers.0.mlp.up_proj.weight", "F32", (INTER, HIDDEN)),
             ("model.layers.0.mlp.down_proj.weight", "F32", (HIDDEN, INTER))]
    return [(0, "model.embed_tokens.weight", "F32", (VOCAB, HIDDEN))] + \
        [(0, n, d, s) for n, d, s in layer] + \
        [(1, "model.norm.weight", "F16", (HIDDEN,)),
         (1, "lm_head.weight", "F32", (VOCAB, HIDDEN)),
         (1, "model.rotary_emb.inv_freq", "F32", (HEAD // 2,))]


def write(dirname: str) -> dict:
    """Writes two shard files (no index); returns name -> array."""
    rng = np.random.default_rng(5)
    os.makedirs(dirname, exist_ok=True)
    files: list = [[], []]
    arrays = {}
    for f, name, dtype, shape in table():
        a = rng.standard_normal(shape).astype(NP[dtype])
        arrays[name] = a
        files[f].append((name, dtype, shape, a.tobytes()))
    for f, entries in enumerate(files):
        st_writer.write(os.path.join(dirname, f"model-{f + 1:05d}-of-00002.safetensors"),
                        entries, {"format": "pt"})
    return arrays


def model(torch, rank: int, n: int, device: str, dtype=None) -> dict:
    """The parameters of rank ``rank`` of ``n`` (tensor parallel), as a
    framework allocates them: {parameter name: tensor}, NaN-filled."""
    def empty(*shape):
        return torch.full(shape, float("nan"), dtype=dtype or torch.float32, device=device)
    q, kv = Q_HEADS * HEAD // n, max(1, KV_HEADS // n) * HEAD
    return {"embed": empty(PADDED // n, HIDDEN), "ln": empty(HIDDEN),
            "qkv": empty(q + 2 * kv, HIDDEN), "o": empty(HIDDEN, Q_HEADS * HEAD // n),
            "gate_up": empty(2 * INTER // n, HIDDEN), "down": empty(HIDDEN, INTER // n),
            "norm": empty(HIDDEN), "head": empty(PADDED // n, HIDDEN)}


def targets(params: dict, rank: int, n: int) -> dict:
    """load_into's targets for ``model``: checkpoint name (after rename:
    the "model." prefix dropped) -> (destination, its slices, source slices)."""
    q, kv = Q_HEADS * HEAD // n, max(1, KV_HEADS // n) * HEAD
    kv_head = rank * KV_HEADS // n if n > KV_HEADS else None   # the replicated head
    kv_src = (slice(kv_head * HEAD, (kv_head + 1) * HEAD),) if kv_head is not None else \
        (slice(rank * kv, (rank + 1) * kv),)
    rows = PADDED // n
    lo, hi = min(VOCAB, rank * rows), min(VOCAB, (rank + 1) * rows)
    inter = INTER // n
    attn, mlp = "layers.0.self_attn.", "layers.0.mlp."
    return {
        "embed_tokens.weight": [(params["embed"], (slice(0, hi - lo),), (slice(lo, hi),))],
        "layers.0.input_layernorm.weight": params["ln"],
        attn + "q_proj.weight": [(params["qkv"], (slice(0, q),),
                                  (slice(rank * q, (rank + 1) * q),))],
        attn + "k_proj.weight": [(params["qkv"], (slice(q, q + kv),), kv_src)],
        attn + "v_proj.weight": [(params["qkv"], (slice(q + kv, q + 2 * kv),), kv_src)],
        attn + "o_proj.weight": [(params["o"], None,
                                  (slice(None), slice(rank * q, (rank + 1) * q)))],
        mlp + "gate_proj.weight": [(params["gate_up"], (slice(0, inter),),
                                    (slice(rank * inter, (rank + 1) * inter),))],
        mlp + "up_proj.weight": [(params["gate_up"], (slice(inter, 2 * inter),),
                                  (slice(rank * inter, (rank + 1) * inter),))],
        mlp + "down_proj.weight": [(params["down"], None,
                                    (slice(None), slice(rank * inter, (rank + 1) * inter)))],
        "norm.weight": params["norm"],
        "lm_head.weight": [(params["head"], (slice(0, hi - lo),), (slice(lo, hi),))],
    }


def rename(name: str):
    """Checkpoint name -> target name; None skips the tensor."""
    if name.endswith("inv_freq"):
        return None
    return name[len("model."):] if name.startswith("model.") else name


def expected(arrays: dict, rank: int, n: int) -> dict:
    """What each parameter of ``model`` holds after the load (NaN: untouched
    padding), built with numpy from the written arrays."""
    q, kv = Q_HEADS * HEAD // n, max(1, KV_HEADS // n) * HEAD
    rows, inter = PADDED // n, INTER // n
    lo, hi = min(VOCAB, rank * rows), min(VOCAB, (rank + 1) * rows)
    kv_head = rank * KV_HEADS // n if n > KV_HEADS else None
    ks = slice(kv_head * HEAD, (kv_head + 1) * HEAD) if kv_head is not None else \
        slice(rank * kv, (rank + 1) * kv)
    a = {k[len("model."):] if k.startswith("model.") else k: v.astype(np.float32)
         for k, v in arrays.items()}
    attn, mlp = "layers.0.self_attn.", "layers.0.mlp."

    def padded(t):
        out = np.full((rows, HIDDEN), np.nan, np.float32)
        out[:hi - lo] = t[lo:hi]
        return out
    return {
        "embed": padded(a["embed_tokens.weight"]), "ln": a["layers.0.input_layernorm.weight"],
        "qkv": np.concatenate([a[attn + "q_proj.weight"][rank * q:(rank + 1) * q],
                               a[attn + "k_proj.weight"][ks], a[attn + "v_proj.weight"][ks]]),
        "o": a[attn + "o_proj.weight"][:, rank * q:(rank + 1) * q],
        "gate_up": np.concatenate([a[mlp + "gate_proj.weight"][rank * inter:(rank + 1) * inter],
                                   a[mlp + "up_proj.weight"][rank * inter:(rank + 1) * inter]]),
        "down": a[mlp + "down_proj.weight"][:, rank * inter:(rank + 1) * inter],
        "norm": a["norm.weight"], "head": padded(a["lm_head.weight"]),
    }


def differences(params: dict, want: dict) -> list:
    """Names of parameters whose values (NaN where expected) differ."""
    out = []
    for k, w in want.items():
        got = params[k].detach().float().cpu().numpy()
        if got.shape != w.shape or not np.array_equal(got, w, equal_nan=True):
            out.append(k)
    return out


def tp_worker(rank: int, n: int, path: str, arrays: dict, device: str, fault: str | None):
    """Rank ``rank`` loads its tensor-parallel parameters over the world."""
    import torch
    import torch.distributed as dist
    from ufile import safetensors as us
    if device == "cuda":
        device = f"cuda:{torch.cuda.current_device()}"
    params = model(torch, rank, n, device)
    tg = targets(params, rank, n)
    if fault == "bad_shape" and rank == 1:
        tg["norm.weight"] = torch.empty(HIDDEN + 1, device=device, dtype=torch.float16)
    if fault == "bad_targets" and rank == 1:
        tg = list(tg.items())
    if fault == "no_targets" and rank == 1:   # an empty DCP plan: joins, receives nothing
        tg = {}
    pointers = {k: v.data_ptr() for k, v in params.items()}
    with dc.recorded_reads() as reads:
        loaded = us.load_into(path, tg, group=dist.group.WORLD, rename=rename, cast=True,
                              max_device_bytes=64 << 10)
    moved = [k for k, v in params.items() if v.data_ptr() != pointers[k]]
    return {"differ": differences(params, expected(arrays, rank, n)), "moved": moved,
            "loaded": loaded, "read": sum(p.size for p in reads)}


def hosts_worker(rank: int, n: int, paths: list, hosts: list, arrays: dict):
    """tp_worker on a rank of host ``hosts[rank]`` (UFILE_HOST_ID), reading
    that host's copy: paths[i] is the copy of the i-th distinct host."""
    os.environ["UFILE_HOST_ID"] = hosts[rank]
    path = paths[list(dict.fromkeys(hosts)).index(hosts[rank])]
    return tp_worker(rank, n, path, arrays, "cpu", None)


def random_rows(arrays: dict, names: tuple, ranks: int, seed: int) -> dict:
    """{name: (columns, [(first row, end row) of each rank])}: random ranges,
    which may be equal, nested, overlap in part or lie apart."""
    rng = np.random.default_rng(seed)
    wants = {}
    for name in names:
        rows, cols = arrays[name].shape
        ranges = []
        for _ in range(ranks):
            a = int(rng.integers(0, rows - 1))
            ranges.append((a, int(rng.integers(a + 1, rows + 1))))
        wants[name] = (cols, ranges)
    return wants


def overlap_worker(rank: int, n: int, path: str, wants: dict, cast: bool,
                   delays: list, device: str = "cpu") -> dict:
    """Rank ``rank`` loads rows ``wants[name][1][rank]`` of each F32 matrix
    ``name`` (of ``wants[name][0]`` columns) into a destination on ``device``
    the load cannot read into (strided, or float64), so its bytes are staged
    and copied when the part is complete. Ranks' rows may overlap in part: a
    part then has bytes only its rank reads (directly) and bytes it shares (a
    broadcast). Each of this rank's reads takes ``delays[rank]`` seconds
    longer and a status is agreed after every collective, so a part taken as
    complete before its own reads end would be copied incomplete. Returns
    {name: the destination's bytes, hex}."""
    import torch
    import torch.distributed as dist
    from ufile import safetensors as us
    dc.slow_reads(rank, delays)
    targets, dests = {}, {}
    for name, (cols, rows) in wants.items():
        a, b = rows[rank]
        if cast:
            dest = torch.zeros(b - a, cols, dtype=torch.float64, device=device)
        else:
            dest = torch.zeros(b - a, cols + 4, device=device)[:, 2:2 + cols]
        dests[name] = dest
        targets[name] = [(dest, None, (slice(a, b),))]
    us.load_into(path, targets, group=dist.group.WORLD, cast=cast)
    return {k: d.cpu().contiguous().numpy().tobytes().hex() for k, d in dests.items()}


def check_overlap(res: list, arrays: dict, wants: dict, cast: bool) -> None:
    """Every rank's destinations hold exactly its rows (cast: equal values,
    NaN for NaN, as a GPU may quiet a signalling NaN's bits)."""
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        for name, (_, rows) in wants.items():
            a, b = rows[rank]
            with np.errstate(invalid="ignore"):   # the random bits hold signalling NaNs
                want = np.ascontiguousarray(arrays[name][a:b]).astype(
                    np.float64 if cast else np.float32).reshape(-1)
            got = np.frombuffer(bytes.fromhex(r["ok"][name]), dtype=want.dtype)
            same = np.array_equal(got, want, equal_nan=True) if cast else \
                got.tobytes() == want.tobytes()
            assert same, f"rank {rank}: {name} rows {a}..{b}"
