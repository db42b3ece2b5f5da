# SPDX-License-Identifier: Apache-2.0
"""Worker: loads safetensors files with one loader and writes one JSON line of
outcomes per file, flushed as each file is done (the next file is the culprit
when the worker dies or hangs).

  st_compare.py ufile|package OUT.jsonl FILE...

Per file: load_file(path) on the CPU, and safe_open(path, "pt"): keys,
metadata and every get_tensor. Each outcome is {"ok": digest} or {"error":
exception class name, "named": whether the message names the file, "msg"}."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys


def run(loader: str, files: list, out: str, timeout: float) -> tuple[list, str | None]:
    """Runs a worker over files: (outcome rows, None) or (the rows it wrote,
    what went wrong: the file it died or hung on)."""
    if os.path.exists(out):
        os.unlink(out)
    cmd = [sys.executable, os.path.abspath(__file__), loader, out, *files]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              check=False)
        problem = None if done.returncode == 0 else \
            f"{loader} worker exited {done.returncode}: {done.stderr[-2000:]}"
    except subprocess.TimeoutExpired:
        problem = f"{loader} worker passed its {timeout} s deadline"
    rows = []
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
    if problem is None and len(rows) != len(files):
        problem = f"{loader} worker wrote {len(rows)} of {len(files)} outcomes"
    if problem is not None and len(rows) < len(files):
        problem += f"; at file {files[len(rows)]}"
    return rows, problem


def _digest(t) -> list:
    import torch
    flat = t.reshape(-1)
    try:
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    except (RuntimeError, TypeError):
        raw = flat.numpy().tobytes()
    return [str(t.dtype), list(t.shape), hashlib.sha1(raw).hexdigest()]


def _error(exc: BaseException, path: str) -> dict:
    return {"error": type(exc).__name__, "named": path in str(exc), "msg": str(exc)[:300]}


def _run(fn, path: str) -> dict:
    try:
        return {"ok": fn(path)}
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return _error(exc, path)


def main(argv: list) -> int:
    loader, out, files = argv[0], argv[1], argv[2:]
    import torch
    torch.set_num_threads(1)  # several workers run side by side
    if loader == "package":
        from safetensors import safe_open
        from safetensors.torch import load_file
    else:
        from ufile.safetensors import load_file, safe_open

    def whole(path):
        return {k: _digest(v) for k, v in load_file(path).items()}

    def lazy(path):
        with safe_open(path, framework="pt") as f:
            keys = list(f.keys())
            return {"keys": sorted(keys), "metadata": f.metadata(),
                    "tensors": {k: _digest(f.get_tensor(k)) for k in keys}}

    with open(out, "a", encoding="utf-8") as sink:
        for path in files:
            row = {"file": path, "load_file": _run(whole, path), "safe_open": _run(lazy, path)}
            sink.write(json.dumps(row) + "\n")
            sink.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
