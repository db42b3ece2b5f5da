# SPDX-License-Identifier: Apache-2.0
"""End to end under torch.distributed.run: a LlamaForCausalLM loaded
tensor-parallel by transformers itself (``from_pretrained(tp_plan="auto")``)
beside the collective load driven by the same model's tp_plan. Every local
shard of transformers' model must equal the collective load's tensor; then the
model's weights are replaced by the collective load's and its logits must equal
those of transformers' own load. A replica (data-parallel) load is checked the
same way against a model loaded whole on each GPU.

  python3 -m torch.distributed.run --standalone --nproc-per-node 4 \\
      bench/loader/e2e_tp.py --dir /data/ckpt [--json out.json]"""
from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if hasattr(t, "to_local") else t


def tp_plan_of(model) -> dict:
    plan = dict(getattr(model, "_tp_plan", None) or {})
    base = getattr(model.config, "base_model_tp_plan", None) or {}
    prefix = model.base_model_prefix + "."
    for k, v in base.items():
        plan.setdefault(k if k.startswith(prefix) else prefix + k, v)
    return plan


def timed(fn):
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    dist.barrier()
    return out, time.perf_counter() - t0


def compare(model, weights: dict) -> list:
    bad = []
    for name, p in model.state_dict().items():
        w, mine = weights.get(name), local(p)
        if w is None or w.shape != mine.shape or not torch.equal(
                w.reshape(-1).view(torch.uint8), mine.contiguous().reshape(-1).view(torch.uint8)):
            bad.append((name, None if w is None else tuple(w.shape), tuple(mine.shape)))
    return bad


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality: random-bit weights make NaN logits, which == never matches."""
    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.int32),
                                              b.contiguous().view(torch.int32))


def logits_with(model, weights: dict, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        for name, p in model.named_parameters():
            local(p.data).zero_()
        for name, p in model.named_parameters():
            local(p.data).copy_(weights[name])
        return model(ids).logits.float()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    from transformers import LlamaForCausalLM
    from ufile.safetensors import load_checkpoint, shard_from_tp_plan
    ids = torch.arange(16, device="cuda").reshape(1, 16) * 7 % 1000
    res = {"ranks": dist.get_world_size()}

    model, res["transformers_tp_s"] = timed(lambda: LlamaForCausalLM.from_pretrained(
        args.dir, tp_plan="auto", dtype=torch.bfloat16).eval())
    with torch.no_grad():
        ref = model(ids).logits.float()
    shard = shard_from_tp_plan(tp_plan_of(model))
    weights, res["collective_tp_s"] = timed(lambda: load_checkpoint(
        args.dir, device="cuda", group=dist.group.WORLD, shard=shard))
    res["tp_mismatches"] = compare(model, weights)[:5]
    res["tp_logits_equal"] = same_bits(logits_with(model, weights, ids), ref)
    del model, weights
    torch.cuda.empty_cache()

    model, res["transformers_whole_s"] = timed(lambda: LlamaForCausalLM.from_pretrained(
        args.dir, device_map=f"cuda:{rank}", dtype=torch.bfloat16).eval())
    with torch.no_grad():
        ref = model(ids).logits.float()
    weights, res["collective_replicas_s"] = timed(lambda: load_checkpoint(
        args.dir, device="cuda", group=dist.group.WORLD))
    res["replica_mismatches"] = compare(model, weights)[:5]
    res["replica_logits_equal"] = same_bits(logits_with(model, weights, ids), ref)
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, res)
    if rank == 0:
        text = json.dumps(every)
        print(text, flush=True)
        if args.json:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    dist.destroy_process_group()
    ok = all(not e["tp_mismatches"] and e["tp_logits_equal"] and not e["replica_mismatches"]
             and e["replica_logits_equal"] for e in every)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
