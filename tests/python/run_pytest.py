# SPDX-License-Identifier: Apache-2.0
"""Runs a pytest file for CTest; exits 77 (skipped), with the reason, when what
the tests need is missing: pytest, numpy, torch, or (--gpu) a CUDA device.

  run_pytest.py [--gpu] [--need MODULE]... TEST_FILE [pytest args]"""
import importlib
import sys

SKIP = 77


def main(argv: list) -> int:
    gpu, need = False, ["pytest", "numpy", "torch"]
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if opt == "--gpu":
            gpu = True
        elif opt == "--need":
            need.append(argv.pop(0))
    for mod in need:
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001 - any import failure means skip
            print(f"SKIPPED: {mod} not importable with {sys.executable}: {exc}")
            return SKIP
    if gpu:
        import torch
        if not torch.cuda.is_available():
            print(f"SKIPPED: torch {torch.__version__} sees no CUDA device")
            return SKIP
    import pytest
    return int(pytest.main(["-q", "-p", "no:cacheprovider", *argv]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
