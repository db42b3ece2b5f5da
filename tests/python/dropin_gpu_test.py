# SPDX-License-Identifier: Apache-2.0
"""On a GPU machine whose python3 has torch's CUDA wheels (NVIDIA's
libcufile.so.0 in site-packages/nvidia/*/lib) and cuda-python:
  status; enable; status says a fresh `import torch` maps ufile's only; the
  three clients of dropin_clients_gpu.py are byte-exact through ufile with no
  LD_PRELOAD; disable; the clients map NVIDIA's library again; every wheel
  file is byte-identical (sha256, mode, mtime, inode) to what it was.
It changes this interpreter's site-packages while it runs (and always runs
`disable` before it exits), so it runs only with UFILE_TEST_DROPIN_ENV=1;
exit 77 (skipped), with the reason, otherwise or without torch, CUDA or
NVIDIA's wheel library.

  dropin_gpu_test.py --dropin PATH/TO/ufile/libcufile.so.0"""
import hashlib
import os
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def fingerprint(path):
    st = os.lstat(path)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return digest, st.st_mode, st.st_mtime_ns, st.st_ino


def dropin_cmd(*args):
    cmd = [sys.executable, "-m", "ufile.dropin", *args]
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(r.stdout + r.stderr, flush=True)
    return r


def skip_reason():
    if os.environ.get("UFILE_TEST_DROPIN_ENV") != "1":
        return ("changes this python3's site-packages while it runs; "
                "set UFILE_TEST_DROPIN_ENV=1 to allow it")
    try:
        import torch
    except ImportError as exc:
        return f"torch not importable with {sys.executable}: {exc}"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} sees no CUDA device"
    return None


def main(argv):
    if len(argv) != 2 or argv[0] != "--dropin":
        sys.exit(__doc__)
    reason = skip_reason()
    if reason:
        print(f"SKIPPED: {reason}")
        return SKIP
    from ufile import _dropin_fs, _elf, dropin
    wheel = [os.path.join(d, n) for d in dropin.env_folders(dropin.site_dirs())
             for n in _dropin_fs.lib_names(d)]
    if not wheel:
        print("SKIPPED: no libcufile in this environment's wheels (nvidia/*/lib)")
        return SKIP
    nvidia = [p for p in wheel if _elf.identify(p).kind == _elf.NVIDIA]
    if len(nvidia) != len(wheel):
        for p in wheel:
            print(f"{p}: {_elf.identify(p).describe()}")
        print("FAIL: every wheel libcufile must be NVIDIA's before the test "
              "(after an interrupted run: python3 -m ufile.dropin disable)")
        return 1
    before = {p: fingerprint(p) for p in nvidia}
    dropin_cmd("status")
    failures = 0
    if dropin_cmd("enable", "--dropin", argv[1]).returncode != 0:
        return 1
    try:  # torch may map no libcufile at import: only a wrong library is a failure
        failures += "not ufile's" in dropin_cmd("status").stdout
        failures += run_clients("ufile")
    finally:
        failures += dropin_cmd("disable").returncode != 0
    failures += "ufile's libcufile only" in dropin_cmd("status").stdout
    failures += run_clients("nvidia")
    after = {p: fingerprint(p) if os.path.exists(p) else None for p in nvidia}
    for p in nvidia:
        same = before[p] == after[p]
        failures += not same
        print(f"{'ok  ' if same else 'FAIL'} {p} byte-identical after disable "
              f"(sha256 {before[p][0][:16]}..., mode, mtime, inode)")
    print("PASS" if failures == 0 else f"FAIL: {failures} check(s) failed")
    return 1 if failures else 0


def run_clients(expect):
    print(f"== clients, expecting {expect}'s libcufile", flush=True)
    return subprocess.run([sys.executable, os.path.join(HERE, "dropin_clients_gpu.py"),
                           "--expect", expect], timeout=1200).returncode != 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
