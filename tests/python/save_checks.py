# SPDX-License-Identifier: Apache-2.0
"""What a checkpoint directory holds, read without ufile's I/O (plain reads
and the header parser), the way each kind of loader looks: ``"index"`` (the
index, else model.safetensors, else every *.safetensors: ufile,
huggingface_hub) and ``"single"`` (model.safetensors first: transformers).
A snapshot is {name: (dtype, shape, bytes)}; a state that is not one
complete checkpoint raises Broken."""
from __future__ import annotations

import json
import os

from ufile.safetensors import _format

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


class Broken(Exception):
    """The directory does not hold one complete checkpoint."""


class Missing(Broken):
    """The index names a file that is not there: every loader refuses the
    directory (a first save interrupted before its last shard was in place)."""


def _files(d: str, order: str) -> tuple[list[str], dict | None]:
    single = os.path.join(d, SINGLE)
    index = os.path.join(d, INDEX)
    if order == "single" and os.path.exists(single):
        return [single], None
    if os.path.exists(index):
        try:
            with open(index, encoding="utf-8") as f:
                wmap = json.load(f)["weight_map"]
        except (ValueError, KeyError, TypeError) as exc:
            raise Broken(f"index: {exc}") from None
        return sorted({os.path.join(d, v) for v in wmap.values()}), wmap
    if os.path.exists(single):
        return [single], None
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".safetensors"))
    if not files:
        raise Broken("no checkpoint file")
    return files, None


def snapshot(d: str, order: str = "index") -> dict:
    files, wmap = _files(d, order)
    out: dict = {}
    for path in files:
        if wmap is not None and not os.path.exists(path):
            raise Missing(f"the index names {path}, which is missing")
        try:
            h = _format.read_header(path)
        except (OSError, _format.SafetensorError) as exc:
            raise Broken(f"{path}: {exc}") from None
        with open(path, "rb") as f:
            data = f.read()
        for name, t in h.tensors.items():
            if name in out:
                raise Broken(f"{name} in two files")
            out[name] = (t.dtype, t.shape, data[h.data_start + t.begin:h.data_start + t.end])
    if wmap is not None:
        for name, f in wmap.items():
            if name not in out:
                raise Broken(f"index names {name} in {f}, which lacks it")
        if set(out) != set(wmap):
            raise Broken("a shard holds tensors the index does not name")
    return out


def of_state_dict(sd: dict) -> dict:
    """The snapshot a state dict of torch tensors saves as."""
    import torch
    return {k: (_dtype(v), tuple(v.shape), v.detach().cpu().contiguous().reshape(-1)
                .view(torch.uint8).numpy().tobytes()) for k, v in sd.items()}


def _dtype(t) -> str:
    from ufile.safetensors._save_format import dtype_of
    return dtype_of(str(t.dtype).split(".")[-1])


def which(d: str, candidates: dict) -> list:
    """The names of the candidate snapshots the two kinds of loader see in
    ``d`` (index first, then single first: each may see a different one);
    raises Broken when one sees none of them."""
    seen = []
    for order in ("index", "single"):
        snap = snapshot(d, order)
        for label, want in candidates.items():
            if snap == want:
                seen.append(label)
                break
        else:
            raise Broken(f"the {order}-first loader sees none of {sorted(candidates)}: "
                         f"{sorted(snap)[:5]}...")
    return seen
