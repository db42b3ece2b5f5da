# SPDX-License-Identifier: Apache-2.0
"""Runs a pytest file for CTest and prints how many tests ran, were skipped
and failed.

  run_pytest.py [--gpu] [--gpus N] [--need MODULE]... TEST_FILE [pytest args]

CPU tests (no --gpu) need pytest, numpy and torch, which CI installs
(scripts/debian-packages.txt): one missing is a failure, not a skip.
GPU tests (--gpu) exit 77 (skipped), with the reason, when a module, torch's
CUDA or a device is missing, and pytest's own skips are allowed, only where
this machine has no NVIDIA GPU (/dev/nvidia0 or nvidia-smi on PATH, found
without CUDA) or UFILE_GPU_SKIPS_OK=1; else each is a failure
(tests/support/gpu_gate.h decides the same way for the C++ tests).
--gpus N (multi-GPU tests) also skips, on any machine, where torch counts
fewer than N GPUs: a machine too small, not a test switched off; so may a
test of its own that uses more GPUs than the machine has, saying so
("needs 4 GPUs")."""
import importlib
import os
import re
import shutil
import sys

SKIP = 77
# A test's own skip because the machine has fewer GPUs than it uses ("needs 4
# GPUs"): allowed on a GPU machine, where any other skip is a failure.
TOO_FEW_GPUS = re.compile(r"\bneeds? \d+ GPUs\b")


def nvidia_gpu_sign() -> str:
    """What shows an NVIDIA GPU here, or ""."""
    if os.path.exists("/dev/nvidia0"):
        return "/dev/nvidia0"
    return shutil.which("nvidia-smi") or ""


def skip_is_failure() -> str:
    """"" where a GPU test may skip; else why it may not."""
    sign = nvidia_gpu_sign()
    if not sign or os.environ.get("UFILE_GPU_SKIPS_OK") == "1":
        return ""
    return (f"this machine has an NVIDIA GPU ({sign}), so a GPU test must run; "
            "UFILE_GPU_SKIPS_OK=1 says skips are expected here")


class Outcomes:
    """A pytest plugin counting what ran."""

    def __init__(self):
        self.ran = self.skipped = self.failed = self.too_few = 0

    def pytest_runtest_logreport(self, report):
        if report.skipped and report.when in ("setup", "call"):
            self.skipped += 1
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            self.too_few += bool(TOO_FEW_GPUS.search(str(reason)))
        elif report.when == "call":
            self.ran += 1
            self.failed += report.failed
        elif report.failed:
            self.failed += 1


def missing(gpu: bool, need: list) -> str:
    """Why the tests cannot run here, or ""."""
    for mod in need:
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001 - any import failure: the test cannot run
            return f"{mod} not importable with {sys.executable}: {exc}"
    if gpu:
        import torch
        if not torch.cuda.is_available():
            return f"torch {torch.__version__} sees no CUDA device"
    return ""


def main(argv: list) -> int:
    gpu, gpus, need = False, 0, ["pytest", "numpy", "torch"]
    while argv and argv[0].startswith("--"):
        opt = argv.pop(0)
        if opt == "--gpu":
            gpu = True
        elif opt == "--gpus":
            gpu, gpus = True, int(argv.pop(0))
        elif opt == "--need":
            need.append(argv.pop(0))
    strict = skip_is_failure() if gpu else ""
    why = missing(gpu, need)
    if why and not gpu:
        print(f"FAILED: {why} (CI installs it: scripts/debian-packages.txt)")
        return 1
    if why:
        print(f"SKIPPED: {why}")
        print("GPU tests: 0 ran (the file skipped)")
        if strict:
            print(f"FAILED: {strict}")
            return 1
        return SKIP
    if gpus:
        import torch
        if torch.cuda.device_count() < gpus:
            print(f"SKIPPED: needs {gpus} GPUs, torch sees {torch.cuda.device_count()}")
            print("GPU tests: 0 ran (the file skipped)")
            return SKIP
    import pytest
    outcomes = Outcomes()
    rc = int(pytest.main(["-q", "-rs", "-p", "no:cacheprovider", *argv], plugins=[outcomes]))
    print(f"{'GPU tests' if gpu else 'tests'}: {outcomes.ran} ran, {outcomes.skipped} skipped, "
          f"{outcomes.failed} failed")
    other = outcomes.skipped - outcomes.too_few
    if rc == 0 and other and strict:
        print(f"FAILED: {other} skipped for other reasons than too few GPUs: {strict}")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
