# SPDX-License-Identifier: Apache-2.0
"""Loading one checkpoint into N GPUs: the collective load beside each rank
loading alone (safetensors, ufile), the bound (each rank reading only its
share with ufile), NCCL bandwidth and raw O_DIRECT reads of each rank's share,
hot and cold page cache; load_into of a model allocated before the clock
(``into``) and dcp.load of it through ufile's reader and torch's (``dcp``,
``dcp_torch``, replicas); DTensors on a 2 x N/2 device mesh, data parallel x
tensor parallel (``mesh``, tp). Every row runs in fresh processes (one per GPU, via
torch.distributed.run): the first load is the headline, CUDA and NCCL set-up
reported apart, the best of repeats beside it. Every tensor of every rank is
checked against the checksums of what the safetensors package loaded.

  python3 bench/loader/bench_dist.py --dir /data/ckpt --size full --ranks 4 \\
      --mode replicas [--cold] [--json out.jsonl]
  ... --size 70b --mode tp          (tensor parallel with the Llama rules)

Needs root (drop_caches), torch with CUDA, safetensors, transformers (to write
the checkpoint), NCCL_NVLS_ENABLE=0 on machines where multicast is off."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Megatron/vLLM-style Llama rules: column-parallel (dim 0) q/k/v/gate/up,
# embeddings and lm_head; row-parallel (dim 1) o_proj and down_proj.
LLAMA_TP = {r"(q_proj|k_proj|v_proj|gate_proj|up_proj)\.weight$": 0,
            r"(o_proj|down_proj)\.weight$": 1, r"embed_tokens\.weight$": 0,
            r"lm_head\.weight$": 0}
ROWS = ("safetensors", "ufile", "collective", "share", "proto", "gather", "raw", "nccl",
        "into", "dcp", "dcp_torch", "mesh")
MODE_ONLY = {"replicas": {"dcp", "dcp_torch"}, "tp": {"mesh"}}   # rows of one mode


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--size", default="full")
    p.add_argument("--ranks", type=int, default=0)
    p.add_argument("--mode", choices=("replicas", "tp"), default="replicas")
    p.add_argument("--rows", help="comma-separated rows (default: every row of the mode)")
    p.add_argument("--cold", action="store_true", help="also the cold-cache rows")
    p.add_argument("--cold-rows", default="raw,collective,rawbuf,share")
    p.add_argument("--cold-passes", type=int, default=2)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--collective-options", default="{}",
                   help="JSON keyword arguments of the collective row, e.g. "
                        "'{\"staging_buffers\": 4, \"request_bytes\": 33554432}'")
    p.add_argument("--json")
    p.add_argument("--trace", help="folder for the collective row's per-rank timelines")
    p.add_argument("--ref", help="folder keeping the reference checksums between runs")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--cache", default="hot", help=argparse.SUPPRESS)
    p.add_argument("--refdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        import dist_rows
        return dist_rows.worker(args)
    return orchestrate(args)


def orchestrate(args) -> int:
    import make_checkpoint
    import torch
    ranks = args.ranks or torch.cuda.device_count()
    if args.trace:
        os.makedirs(args.trace, exist_ok=True)
    if not os.path.exists(os.path.join(args.dir, "model.safetensors.index.json")):
        t0 = time.perf_counter()
        info = make_checkpoint.write(args.dir, args.size,
                                     shards=make_checkpoint.SHARDS.get(args.size, 4))
        emit(args, {"wrote": info, "s": round(time.perf_counter() - t0, 1)})
    if args.rows is None:
        other = MODE_ONLY["tp" if args.mode == "replicas" else "replicas"]
        args.rows = ",".join(r for r in ROWS if r not in other)
    wanted = [r for r in args.rows.split(",") if r]
    order = ["safetensors"] + [r for r in wanted if r != "safetensors"]  # reference first
    if args.ref:   # the reference checksums of an earlier run of the same ranks and mode
        refdir = os.path.join(args.ref, f"{args.mode}-{ranks}")
        if os.path.exists(os.path.join(refdir, "ref-0.json")):
            order = [r for r in order if r != "safetensors"]
        os.makedirs(refdir, exist_ok=True)
    else:
        refdir = tempfile.mkdtemp(prefix="ufile-bench-ref-")
    cold = [r for r in args.cold_rows.split(",") if r] if args.cold else []
    for row in order:
        if row not in ("raw", "rawbuf"):
            emit(args, launch(args, row, "hot", ranks, refdir))
    for _ in range(args.cold_passes):  # the disk drifts over minutes: the rows alternate
        for row in cold:
            emit(args, launch(args, row, "cold", ranks, refdir))
    return 0


def launch(args, row: str, cache: str, ranks: int, refdir: str) -> dict:
    env = dict(os.environ, NCCL_NVLS_ENABLE=os.environ.get("NCCL_NVLS_ENABLE", "0"),
               PYTHONUNBUFFERED="1")
    out = os.path.join(refdir, f"row-{row}-{cache}.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={ranks}", os.path.abspath(__file__), "--worker", row,
           "--cache", cache, "--dir", args.dir, "--mode", args.mode, "--refdir", refdir,
           "--reps", str(args.reps), "--json", out] + \
        (["--trace", os.path.abspath(args.trace)] if args.trace else []) + [
           "--collective-options", args.collective_options]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or not os.path.exists(out):
        text = done.stderr or done.stdout
        # the ranks' own errors first: torchrun's summary after them names none
        causes = [line for line in text.splitlines()
                  if "Error" in line and "torch/distributed/elastic" not in line]
        return {"row": row, "cache": cache, "ranks": ranks,
                "error": "\n".join(causes[-8:] + [text[-2000:]])}
    with open(out) as f:
        res = json.load(f)
    res["process_wall_s"] = round(wall, 1)
    return res


def emit(args, res: dict) -> None:
    print(json.dumps(res), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(res) + "\n")


if __name__ == "__main__":
    sys.exit(main())
