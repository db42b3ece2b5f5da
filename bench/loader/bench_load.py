# SPDX-License-Identifier: Apache-2.0
"""Safetensors loading into one GPU: ufile's loader beside the safetensors
package, the pinned-copy ceiling and raw O_DIRECT reads, hot and cold page
cache, in one process, every tensor checked against safetensors' bytes.

  python3 bench/loader/bench_load.py --dir /data/ckpt --size full [--json out.json]

Needs torch with CUDA, safetensors, transformers (for the checkpoint's names
and the end-to-end rows), root for drop_caches. PYTHONPATH must reach python/
and UFILE_LIBRARY name libufile.so.0 unless the package is installed."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_checkpoint  # noqa: E402
import rows  # noqa: E402

GIB = 1 << 30


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def warm(files: list[str]) -> None:
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.read(64 << 20):
                pass


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def verify(out: dict, ref: dict) -> str:
    if set(out) != set(ref):
        return f"FAIL names differ: {sorted(set(out) ^ set(ref))[:3]}"
    bad = [n for n in ref if not same(out[n].to(ref[n].device), ref[n])]
    return "ok" if not bad else f"FAIL {len(bad)} tensors differ: {bad[:3]}"


class Bench:
    def __init__(self, args, files, ref, nbytes):
        self.args, self.files, self.ref, self.nbytes = args, files, ref, nbytes
        self.results = []
        self.phases: dict = {}  # the ufile rows pass it as load_checkpoint's times=

    def row(self, label: str, fn, cold: bool, reps: int, check=None) -> dict:
        times, extras, checks = [], [], []
        for _ in range(reps):
            drop_caches() if cold else None
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            t0 = time.perf_counter()
            out = fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            extras.append(torch.cuda.max_memory_allocated() - base - self.nbytes)
            checks.append((check or verify)(out, self.ref))
            del out
        sec = statistics.median(times)
        res = {"row": label, "cache": "cold" if cold else "hot", "s": round(sec, 3),
               "GBps": round(self.nbytes / sec / 1e9, 2), "runs": [round(t, 3) for t in times],
               "extra_GiB": round(max(extras) / GIB, 3), "check": checks[0] if len(
                   set(checks)) == 1 else str(checks)}
        if label.startswith("ufile") and self.phases:
            res["phases_s"] = {k: round(v, 3) for k, v in self.phases.items()}
            self.phases.clear()
        self.emit(res)
        return res

    def emit(self, res: dict) -> None:
        self.results.append(res)
        print(json.dumps(res), flush=True)
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump(self.results, f, indent=1)


def check_model(model, ref) -> str:
    return verify(dict(model.state_dict()), ref)


def fresh(args, opts: dict) -> dict:
    cmd = [sys.executable, os.path.join(HERE, "fresh_load.py"), args.dir, json.dumps(opts)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def pinned(b: Bench) -> None:
    gbps = rows.pinned_ceiling()
    b.emit({"row": "pinned-copy ceiling (1 GiB cudaMemcpyAsync x8)", "GBps": round(gbps, 2)})


def raw_cold(b: Bench) -> None:
    for _ in range(b.args.cold_reps):
        drop_caches()
        t0 = time.perf_counter()
        n = rows.raw_odirect(b.files)
        sec = time.perf_counter() - t0
        b.emit({"row": "raw O_DIRECT preadv (16 threads, 16 MiB)", "cache": "cold",
                "s": round(sec, 3), "GBps": round(n / sec / 1e9, 2)})


def reads_only(b: Bench) -> None:
    for inflight, rb in ((4, 0), (8, 256 << 20), (16, 64 << 20)):
        secs = []
        for _ in range(b.args.reps):
            sec, out = rows.ufile_reads_only(b.args.dir, inflight, rb)
            secs.append(sec)
            check = verify(out, b.ref)
            del out
        sec = statistics.median(secs)
        b.emit({"row": f"ufile reads only, buffers preallocated (inflight={inflight}, "
                       f"request={rb >> 20}MiB)", "cache": "hot", "s": round(sec, 3),
                "GBps": round(b.nbytes / sec / 1e9, 2), "runs": [round(t, 3) for t in secs],
                "check": check})


def alloc_only(b: Bench) -> None:
    from ufile.safetensors import _format, checkpoint_files
    sizes = [_format.read_header(f).file_size for f in checkpoint_files(b.args.dir)]
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    t0 = time.perf_counter()
    bufs = [torch.empty(n, dtype=torch.uint8, device="cuda") for n in sizes]
    torch.cuda.synchronize()
    b.emit({"row": "torch.empty of the 4 file buffers after empty_cache (cudaMalloc)",
            "s": round(time.perf_counter() - t0, 3)})
    del bufs


def sweep(b: Bench) -> None:
    d, ph = b.args.dir, b.phases
    for inflight in (4, 8, 16):
        for rb in (0, 64 << 20, 256 << 20):
            b.row(f"ufile sweep inflight={inflight} request={rb >> 20}MiB",
                  lambda: rows.ufile_load(d, times=ph, inflight=inflight, request_bytes=rb),
                  False, b.args.reps)
    b.row("ufile sweep register_buffers",
          lambda: rows.ufile_load(d, times=ph, register_buffers=True), False, b.args.reps)
    b.row("ufile sweep direct=auto (hot)", lambda: rows.ufile_load(d, times=ph, direct="auto"),
          False, b.args.reps)
    b.row("ufile sweep direct=False (hot)", lambda: rows.ufile_load(d, times=ph, direct=False),
          False, b.args.reps)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--size", default="small", choices=sorted(make_checkpoint.SIZES))
    p.add_argument("--json")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cold-reps", type=int, default=1)
    p.add_argument("--no-cold", action="store_true")
    p.add_argument("--no-e2e", action="store_true")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--only", default="", help="comma list of: st,stcuda,ufile,bounded,fresh,e2e")
    args = p.parse_args()
    if not os.path.exists(os.path.join(args.dir, "model.safetensors.index.json")):
        t0 = time.perf_counter()
        info = make_checkpoint.write(args.dir, args.size)
        print(json.dumps({"wrote": info, "s": round(time.perf_counter() - t0, 1)}), flush=True)
    files = rows.shard_files(args.dir)
    warm(files)
    ref = rows.safetensors_cuda(args.dir)
    nbytes = sum(t.numel() * t.element_size() for t in ref.values())
    print(json.dumps({"tensors": len(ref), "bytes": nbytes, "files": len(files),
                      "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}),
          flush=True)
    b = Bench(args, files, ref, nbytes)
    run_all(b, set(filter(None, args.only.split(","))))
    return 0


def guarded(b: Bench, fn) -> None:
    """Runs one extra section; a failure is logged and the run goes on."""
    try:
        fn(b)
    except Exception as exc:  # noqa: BLE001 - the main rows matter more
        b.emit({"row": f"{fn.__name__} FAILED", "error": repr(exc)[:500]})


def run_all(b: Bench, only: set) -> None:
    a, d = b.args, b.args.dir
    want = (lambda k: not only or k in only)
    bounded = {"max_device_bytes": GIB}
    loaders = []
    if want("st") or want("stcuda"):
        loaders.append(("safetensors load_file(device=cuda)", lambda: rows.safetensors_cuda(d)))
    if want("st"):
        loaders.append(("safetensors load_file(cpu) then .to(cuda)",
                        lambda: rows.safetensors_cpu_then_cuda(d)))
    if want("ufile"):
        loaders.append(("ufile load_checkpoint (default)",
                        lambda: rows.ufile_load(d, times=b.phases)))
    if want("bounded"):
        loaders.append(("ufile load_checkpoint max_device_bytes=1GiB",
                        lambda: rows.ufile_load(d, times=b.phases, **bounded)))
    pinned(b)
    warm(b.files)
    for label, fn in loaders:
        b.row(label, fn, False, a.reps)
    if want("ufile"):
        guarded(b, reads_only)
        guarded(b, alloc_only)
    if a.sweep:
        guarded(b, sweep)
    if want("fresh"):
        warm(b.files)
        for opts in ({}, bounded):
            r = fresh(a, opts)
            r["row"] = f"fresh process, load_checkpoint {opts or 'default'} (hot)"
            b.emit(r)
    if want("e2e") and not a.no_e2e:
        warm(b.files)
        b.row("e2e: meta-device LlamaForCausalLM + ufile weights (assign)",
              lambda: rows.model_from_ufile(d, times=b.phases), False, a.reps,
              check_model)
        b.row("e2e: LlamaForCausalLM.from_pretrained(device_map=cuda)",
              lambda: rows.model_from_pretrained(d), False, a.reps, check_model)
    if not a.no_cold:
        # The disk moves by +-15 % over minutes: raw O_DIRECT reads right before
        # and after ufile's cold rows.
        raw_cold(b)
        for label, fn in reversed(loaders):
            b.row(label, fn, True, a.cold_reps)
            if label.startswith("ufile load_checkpoint (default)"):
                raw_cold(b)
        if want("e2e") and not a.no_e2e:
            b.row("e2e: meta-device LlamaForCausalLM + ufile weights (assign)",
                  lambda: rows.model_from_ufile(d, times=b.phases), True, a.cold_reps,
                  check_model)
            b.row("e2e: LlamaForCausalLM.from_pretrained(device_map=cuda)",
                  lambda: rows.model_from_pretrained(d), True, a.cold_reps, check_model)


if __name__ == "__main__":
    sys.exit(main())
