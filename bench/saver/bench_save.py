# SPDX-License-Identifier: Apache-2.0
"""Saving a checkpoint from GPU memory: ufile's save_checkpoint beside the
safetensors package, torch.save and the raw bound, each row in a fresh process.

  PYTHONPATH=python UFILE_LIBRARY=build/src/libufile.so.0 \\
    python3 bench/saver/bench_save.py --dir /data/save-bench [--scale 1.0] [--gpus N]

The data: bf16 tensors with Llama-3-8B's names and shapes (16.06 GB at
--scale 1; --scale s keeps round(32 s) layers, so 0.25 is about 4.6 GB), random
bits, generated on the GPU in each row's process before its clock starts.
Every timed region ends with the data flushed (fsync of each file). The page
cache is dropped before each row when run as root (else stated as not dropped);
each row writes into an empty directory, removed afterwards.

Rows (one GPU): ``copy`` device -> pinned host copy of every tensor; ``raw``
and ``raw_direct`` the same bytes written from pinned host memory with plain
pwrite of 64 MiB + fsync, buffered and O_DIRECT, one file per shard;
``safetensors`` safetensors.torch.save_file per shard + fsync; ``torch_save``
torch.save of the state dict + fsync; ``ufile`` and ``ufile_direct``
save_checkpoint buffered and O_DIRECT; ``async`` save_checkpoint(blocking=False):
time until it returns (training may continue) and until durable, twice in one
process (the second reuses torch's cached pinned memory); ``async_device`` the
same with copy="device" (staging in GPU memory). With --gpus N > 1,
the tensor-parallel rows: ``dist_collective`` save_checkpoint(group=, shard=)
of parts split as in docs/DISTRIBUTED.md (``_direct``: direct=True),
``dist_full`` each rank saving a full copy, ``dist_bound`` each rank writing
only its share (1/N of the bytes) from pinned memory with pwrite + fsync
(``_direct``: O_DIRECT). With --device cpu the TP rows run N processes on gloo
with CPU tensors: the files' side of the collective save without the GPUs
(--outer-only splits every TP tensor along dimension 0, so no part is gathered
over gloo). Prints JSON lines (--json) and a table."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "loader"))
CHUNK = 64 << 20
TP = {r"(q_proj|k_proj|v_proj|gate_proj|up_proj)\.weight$": 0,
      r"(o_proj|down_proj)\.weight$": 1, r"(embed_tokens|lm_head)\.weight$": 0}
ONE_GPU = ["copy", "raw", "raw_direct", "safetensors", "torch_save", "ufile", "ufile_direct",
           "async", "async_device"]
MULTI = ["dist_bound", "dist_bound_direct", "dist_collective", "dist_collective_direct",
         "dist_full"]


def shapes(scale: float) -> list:
    """(name, shape) of LlamaForCausalLM's state dict for Llama-3-8B
    (bench/loader/make_checkpoint.py's "full"), with round(32 scale) layers."""
    import make_checkpoint
    c = make_checkpoint.SIZES["full"]
    h, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] * h // c["num_attention_heads"]
    out = [("model.embed_tokens.weight", (v, h))]
    for i in range(max(1, round(c["num_hidden_layers"] * scale))):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj.weight", (h, h)), (p + "self_attn.k_proj.weight", (kv, h)),
                (p + "self_attn.v_proj.weight", (kv, h)), (p + "self_attn.o_proj.weight", (h, h)),
                (p + "mlp.gate_proj.weight", (inter, h)), (p + "mlp.up_proj.weight", (inter, h)),
                (p + "mlp.down_proj.weight", (h, inter)),
                (p + "input_layernorm.weight", (h,)), (p + "post_attention_layernorm.weight", (h,))]
    return out + [("model.norm.weight", (h,)), ("lm_head.weight", (v, h))]


def make_state(scale: float, device: str) -> dict:
    import torch
    g = torch.Generator(device=device).manual_seed(5)
    return {n: torch.randint(-32768, 32767, s, generator=g, device=device,
                             dtype=torch.int16).view(torch.bfloat16) for n, s in shapes(scale)}


def shard_size(sd: dict) -> int:
    """A shard size giving 4 shards, as the published 8B checkpoint has."""
    total = sum(t.numel() * 2 for t in sd.values())
    return -(-total // 4) + (64 << 20)


def drop_caches() -> str:
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "dropped"
    except OSError:
        return "not dropped (not root)"


def fsync_dir_files(d: str) -> None:
    for name in os.listdir(d):
        fd = os.open(os.path.join(d, name), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    fd = os.open(d, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def sync(device: str) -> None:
    import torch
    if device != "cpu":
        torch.cuda.synchronize()


def pinned_shards(sd: dict, device: str) -> list:
    """The bytes of each shard (as save_checkpoint lays them out) in pinned
    host memory, made before the clock starts."""
    import torch
    from ufile.safetensors._save_checkpoint import prepare
    files, _ = prepare(sd, shard_size(sd), None)
    out = []
    for f in files:
        buf = host_buffer(f.total, device)
        buf[:len(f.head)] = torch.frombuffer(bytearray(f.head), dtype=torch.uint8)
        for e in f.entries:
            if e.source is not None:
                start = len(f.head) + e.begin
                buf[start:start + e.nbytes].copy_(e.source.reshape(-1).view(torch.uint8))
        out.append((f.name, buf))
    sync(device)
    return out


def host_buffer(n: int, device: str):
    """n bytes of page-aligned host memory: pinned (CUDA), else an anonymous
    mapping (the CPU smoke test), so O_DIRECT takes it."""
    import mmap
    import torch
    if device != "cpu":
        return torch.empty(n, dtype=torch.uint8, pin_memory=True)
    buf = torch.frombuffer(mmap.mmap(-1, max(n, 1)), dtype=torch.uint8)[:n]
    buf.fill_(0x5A)   # its pages exist before the clock, as pinned memory's do
    return buf


def raw_write(path: str, buf, direct: bool) -> None:
    """pwrite of 64 MiB pieces from ``buf`` (pinned, page aligned) + fsync."""
    view = memoryview(buf.numpy())
    n = len(view)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0)
    fd = os.open(path, flags, 0o644)
    try:
        off = 0
        while off < n:
            size = min(CHUNK, n - off)
            if direct and size % 4096:  # the tail: an aligned length, trimmed below
                size = (size // 4096) * 4096
                if size == 0:
                    break
            off += os.pwrite(fd, view[off:off + size], off)
        if off < n:  # the unaligned tail, buffered
            os.close(fd)
            fd = os.open(path, os.O_WRONLY)
            os.pwrite(fd, view[off:], off)
        os.fsync(fd)
    finally:
        os.close(fd)


def run_row(row: str, args: argparse.Namespace) -> dict:
    import torch
    device = args.device
    sd = make_state(args.scale, device)
    nbytes = sum(t.numel() * 2 for t in sd.values())
    out = os.path.join(args.dir, f"row-{row}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    res = {"row": row, "bytes": nbytes, "tensors": len(sd), "page_cache": drop_caches()}
    limit = shard_size(sd)
    from ufile.safetensors import save_checkpoint
    try:
        if row == "copy":
            bufs = {k: torch.empty(v.shape, dtype=v.dtype, pin_memory=device != "cpu")
                    for k, v in sd.items()}
            t0 = time.perf_counter()
            for k, v in sd.items():
                bufs[k].copy_(v, non_blocking=True)
            sync(device)
            res["seconds"] = time.perf_counter() - t0
        elif row in ("raw", "raw_direct"):
            shards = pinned_shards(sd, device)
            t0 = time.perf_counter()
            for name, buf in shards:
                raw_write(os.path.join(out, name), buf, row == "raw_direct")
            res["seconds"] = time.perf_counter() - t0
        elif row == "safetensors":
            from safetensors.torch import save_file
            from ufile.safetensors._save_shards import plan
            layout, _ = plan(sd, limit)
            t0 = time.perf_counter()
            for name, keys in layout.items():
                save_file({k: sd[k] for k in keys}, os.path.join(out, name),
                          metadata={"format": "pt"})
            fsync_dir_files(out)
            res["seconds"] = time.perf_counter() - t0
        elif row == "torch_save":
            t0 = time.perf_counter()
            torch.save(sd, os.path.join(out, "model.pt"))
            fsync_dir_files(out)
            res["seconds"] = time.perf_counter() - t0
        elif row in ("ufile", "ufile_direct"):
            sync(device)
            t0 = time.perf_counter()
            save_checkpoint(sd, out, max_shard_size=limit, direct=row == "ufile_direct")
            res["seconds"] = time.perf_counter() - t0
        elif row in ("async", "async_device"):
            for attempt in ("first", "second"):
                shutil.rmtree(out, ignore_errors=True)
                sync(device)
                t0 = time.perf_counter()
                h = save_checkpoint(sd, out, max_shard_size=limit, blocking=False,
                                    direct=args.async_direct,
                                    copy="device" if row == "async_device" else True)
                cont = time.perf_counter() - t0
                h.wait()
                res[f"{attempt}_continue"] = cont
                res[f"{attempt}_durable"] = time.perf_counter() - t0
            res["seconds"] = res["second_durable"]
            res["continue"] = res["second_continue"]
        else:
            raise ValueError(row)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    res["GBps"] = nbytes / res["seconds"] / 1e9
    return res


def _dist_rank(rank: int, n: int, port: int, row: str, args: argparse.Namespace, q) -> None:
    import torch
    import torch.distributed as dist
    from ufile.safetensors import save_checkpoint
    device = args.device
    if device == "cpu":
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=n)
    else:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=n, device_id=torch.device("cuda", rank))
    rules = {p: 0 for p in TP} if args.outer_only else TP
    try:
        sd = make_state(args.scale, device)
        limit = shard_size(sd)
        import re
        from ufile.safetensors._save_dist_plan import Held, make_save_plan, writes_of
        dims = {name: next((d for p, d in rules.items() if re.search(p, name)), None)
                for name in sd}
        parts, decl = {}, {}
        for name, t in sd.items():
            dim = dims[name]
            parts[name] = t if dim is None else torch.tensor_split(t, n, dim)[rank].contiguous()
        out = os.path.join(args.dir, f"row-{row}")
        if rank == 0:
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            state = drop_caches()
        dist.barrier()
        if row in ("dist_bound", "dist_bound_direct"):
            for name, t in parts.items():
                decl[name] = Held("BF16", tuple(t.shape), dims[name])
            decls: list = [None] * n
            dist.all_gather_object(decls, decl)
            plan = make_save_plan(decls, limit, {"format": "pt"})
            share = sum(size for ps in writes_of(plan, rank).values() for *_, size in ps)
            buf = host_buffer(share, device)
            sync(device)
            dist.barrier()
            t0 = time.perf_counter()
            raw_write(os.path.join(out, f"rank{rank}.bin"), buf, row == "dist_bound_direct")
        elif row in ("dist_collective", "dist_collective_direct"):
            sync(device)
            dist.barrier()
            t0 = time.perf_counter()
            save_checkpoint(parts, out, max_shard_size=limit, group=dist.group.WORLD,
                            shard=rules, direct=row == "dist_collective_direct")
        else:  # dist_full: every rank its own full copy
            sync(device)
            dist.barrier()
            t0 = time.perf_counter()
            save_checkpoint(sd, os.path.join(out, f"rank{rank}"), max_shard_size=limit)
        mine = time.perf_counter() - t0
        times: list = [None] * n
        dist.all_gather_object(times, mine)
        if rank == 0:
            total = sum(t.numel() * 2 for t in sd.values())
            q.put({"row": row, "ranks": n, "bytes": total * (n if row == "dist_full" else 1),
                   "seconds": max(times), "per_rank": times, "page_cache": state,
                   "GBps": total * (n if row == "dist_full" else 1) / max(times) / 1e9})
            shutil.rmtree(out, ignore_errors=True)
    finally:
        dist.destroy_process_group()


def run_dist_row(row: str, args: argparse.Namespace) -> dict:
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    mp.start_processes(_dist_rank, args=(args.gpus, port, row, args, q), nprocs=args.gpus,
                       join=True, start_method="spawn")
    return q.get(timeout=60)


def table(results: list) -> str:
    by = {r["row"]: r for r in results if "seconds" in r}
    bound = min((by[k]["seconds"] for k in ("raw", "raw_direct") if k in by), default=None)
    lines = [f"{'row':<17}{'seconds':>9}{'GB/s':>8}  note"]
    for r in results:
        if "error" in r:
            lines.append(f"{r['row']:<17}{'-':>9}{'-':>8}  {r['error'][:70]}")
            continue
        note = r.get("page_cache", "")
        if r["row"] in ("ufile", "ufile_direct", "safetensors", "torch_save") and bound:
            note += f"; {bound / r['seconds']:.2f}x of the best raw bound"
        if r["row"] in ("async", "async_device"):
            note += (f"; continue {r['continue']:.3f} s (first {r['first_continue']:.3f} s)")
            if "copy" in by:
                note += f" = {r['continue'] / by['copy']['seconds']:.2f}x the copy"
        bounds = [by[k]["seconds"] for k in ("dist_bound", "dist_bound_direct") if k in by]
        if r["row"] in ("dist_collective", "dist_collective_direct") and bounds:
            note += f"; its time {r['seconds'] / min(bounds):.2f}x the best bound's"
        lines.append(f"{r['row']:<17}{r['seconds']:>9.3f}{r['GBps']:>8.2f}  {note}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="an empty-able directory on the disk to test")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the 8B layers")
    ap.add_argument("--gpus", type=int, default=None, help="ranks of the TP rows (default "
                    "every GPU; 1: no TP rows)")
    ap.add_argument("--rows", default=None, help="comma-separated subset of rows")
    ap.add_argument("--json", default=None, help="append each row's JSON to this file")
    ap.add_argument("--device", default="cuda", help="cpu: CPU tensors (the one-GPU rows as a "
                    "smoke test; the TP rows over gloo, --gpus processes)")
    ap.add_argument("--async-direct", action="store_true", help="the async row with O_DIRECT")
    ap.add_argument("--outer-only", action="store_true", help="TP rows: split every TP tensor "
                    "along dimension 0 (the files' side alone, no part gathered)")
    ap.add_argument("--row", default=None, help=argparse.SUPPRESS)  # a child's one row
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    if args.row:
        res = run_dist_row(args.row, args) if args.row.startswith("dist_") else \
            run_row(args.row, args)
        print("RESULT " + json.dumps(res), flush=True)
        return 0
    if args.gpus is None:
        import torch
        args.gpus = torch.cuda.device_count() if args.device != "cpu" else 1
    rows = ONE_GPU + (MULTI if args.gpus > 1 else [])
    if args.rows:
        rows = [r for r in args.rows.split(",") if r]
    results = []
    for row in rows:
        cmd = [sys.executable, os.path.abspath(__file__), "--row", row, "--dir", args.dir,
               "--scale", str(args.scale), "--gpus", str(args.gpus), "--device", args.device]
        if args.async_direct:
            cmd.append("--async-direct")
        if args.outer_only:
            cmd.append("--outer-only")
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        got = [ln[7:] for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        res = json.loads(got[-1]) if p.returncode == 0 and got else \
            {"row": row, "error": (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]}
        if "error" in res and isinstance(res["error"], list):
            res["error"] = res["error"][0]
        res["wall"] = time.monotonic() - t0
        results.append(res)
        print(json.dumps(res), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(res) + "\n")
    size = next((r["bytes"] for r in results if "bytes" in r and r["row"] == rows[0]), None)
    ranks = f"{args.gpus} GPU(s)" if args.device != "cpu" else f"{args.gpus} CPU rank(s)"
    print(f"bench_save: --scale {args.scale} ({size / 1e9:.2f} GB of bf16 tensors a copy), "
          f"{ranks}, {args.dir}" if size else "bench_save:")
    print(table(results))
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
