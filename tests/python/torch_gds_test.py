# SPDX-License-Identifier: Apache-2.0
"""PyTorch's torch.cuda.gds.GdsFile saves and loads a 1 GiB random tensor
byte-exactly through ufile's libcufile.so.0 (preloaded by the CTest command).
Exits 77 (skipped) when torch, CUDA or a GPU is missing."""
import os
import sys
import tempfile

SKIP = 77


def loaded_cufile():
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libcufile" in line}
    return sorted(paths)


def main():
    try:
        import torch
        from torch.cuda.gds import GdsFile
    except Exception as exc:  # noqa: BLE001 - any import failure means skip
        print(f"SKIPPED: torch.cuda.gds not importable: {exc}")
        return SKIP
    if not torch.cuda.is_available():
        print("SKIPPED: torch sees no GPU")
        return SKIP
    size = int(os.environ.get("UFILE_TORCH_BYTES", 1 << 30))
    tmpdir = os.environ.get("UFILE_TEST_TMPDIR", tempfile.gettempdir())
    os.makedirs(tmpdir, exist_ok=True)
    path = os.path.join(tmpdir, f"torch-gds-{os.getpid()}.bin")
    gen = torch.Generator(device="cuda").manual_seed(1234)
    src = torch.randint(0, 256, (size,), dtype=torch.uint8, device="cuda", generator=gen)
    dst = torch.zeros_like(src)
    try:
        f = GdsFile(path, os.O_CREAT | os.O_RDWR)
        f.save_storage(src.untyped_storage(), offset=0)
        f.load_storage(dst.untyped_storage(), offset=0)
        del f
        on_disk = os.path.getsize(path)
    finally:
        if os.path.exists(path):
            os.unlink(path)
    libs = loaded_cufile()
    print(f"libcufile loaded from: {libs}")
    equal = torch.equal(src, dst)
    print(f"{size} bytes saved and loaded, file {on_disk} bytes, equal={equal}")
    want = os.environ.get("UFILE_EXPECT_LIB")
    if want and not any(os.path.realpath(want) == os.path.realpath(p) for p in libs):
        print(f"FAIL: expected {want} to be the libcufile in use")
        return 1
    return 0 if equal and on_disk == size else 1


if __name__ == "__main__":
    sys.exit(main())
