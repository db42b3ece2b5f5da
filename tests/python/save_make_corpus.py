# SPDX-License-Identifier: Apache-2.0
"""Writes the save corpus with the safetensors package: each case of
save_cases.CASES saved with ``safetensors.torch.save_file`` (or
``safetensors.numpy.save_file``), and the package's exception for each input
of save_cases.REFUSALS, into OUT:

  python3 tests/python/save_make_corpus.py --out OUT

OUT/<case>.safetensors (the package's file), OUT/manifest.json (versions, each
file's sha256, whether ``save()`` returned the same bytes, whether the same
tensors on a CUDA device gave the same bytes, and each refusal's exception type
and message). tests/python/testdata/save/ holds the small files it made on the
GPU machine; test_save_format_cpu.py compares ufile's output with them."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import save_cases  # noqa: E402


def _modules(framework: str) -> tuple:
    if framework == "pt":
        import torch
        import safetensors.torch as st
        return torch, st
    import numpy
    import safetensors.numpy as sn
    return numpy, sn


def _exc(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)}


def _cuda(tensors: dict) -> dict | None:
    import torch
    if not torch.cuda.is_available():
        return None
    return {k: v.to("cuda") for k, v in tensors.items()}


def write_case(out: str, name: str) -> dict:
    framework, _ = save_cases.CASES[name]
    fw, mod = _modules(framework)
    try:
        tensors, metadata = save_cases.build(name, fw)
    except save_cases.Unavailable as exc:
        return {"unavailable": str(exc)}
    path = os.path.join(out, f"{name}.safetensors")
    try:
        mod.save_file(tensors, path, metadata=metadata)
    except Exception as exc:  # noqa: BLE001 - the package refuses this input: record it
        return {"refused": _exc(exc)}
    data = open(path, "rb").read()
    rec = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
           "save_equal": mod.save(tensors, metadata=metadata) == data}
    if framework == "pt":
        dev = _cuda(tensors)
        if dev is not None:
            rec["cuda_equal"] = mod.save(dev, metadata=metadata) == data
    return rec


def write_refusal(name: str) -> dict:
    framework, _ = save_cases.REFUSALS[name]
    fw, mod = _modules(framework)
    try:
        tensors, metadata = save_cases.build(name, fw)
    except save_cases.Unavailable as exc:
        return {"unavailable": str(exc)}
    rec = {}
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        for call in ("save", "save_file"):
            try:
                if call == "save":
                    mod.save(tensors, metadata=metadata)
                else:
                    mod.save_file(tensors, os.path.join(scratch, "x.safetensors"),
                                  metadata=metadata)
                rec[call] = {"accepted": True}
            except Exception as exc:  # noqa: BLE001 - what the package raises is the record
                rec[call] = _exc(exc)
        rec["file_left"] = os.path.exists(os.path.join(scratch, "x.safetensors"))
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import numpy
    import safetensors
    versions = {"safetensors": safetensors.__version__, "numpy": numpy.__version__,
                "python": sys.version.split()[0]}
    try:
        import torch
        versions["torch"] = torch.__version__
    except ImportError:
        pass
    manifest = {"versions": versions, "cases": {}, "refusals": {}}
    for name in save_cases.CASES:
        manifest["cases"][name] = write_case(args.out, name)
    for name in save_cases.REFUSALS:
        manifest["refusals"][name] = write_refusal(name)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True, ensure_ascii=False)
    bad = [n for n, r in manifest["cases"].items() if n not in save_cases.UNORDERED_METADATA
           and (r.get("save_equal") is False or r.get("cuda_equal") is False)]
    print(f"{len(manifest['cases'])} cases, {len(manifest['refusals'])} refusals -> {args.out}"
          + (f"; save()/CUDA bytes differ for {bad}" if bad else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
