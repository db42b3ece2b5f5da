# SPDX-License-Identifier: Apache-2.0
"""Three cuFile clients, each run in a fresh process with no LD_PRELOAD, say
which libcufile they got and whether a GPU write and read through it were
byte-exact:
  torch        PyTorch's torch.cuda.gds.GdsFile (save_storage, load_storage)
  cuda_python  cuda-python's cuda.bindings.cufile (handle/buf register, write, read)
  maps         a client that, like InstantTensor, takes the first libcufile in
               /proc/self/maps after `import torch` and calls it with ctypes

  dropin_clients_gpu.py --expect ufile|nvidia    run all three, check the library
  dropin_clients_gpu.py --client NAME             run one, print one JSON line

--expect ufile: every client maps ufile's libcufile only and is byte-exact.
--expect nvidia: every client maps NVIDIA's libcufile only (its I/O may fail
on a machine where NVIDIA's library cannot register a file)."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

SIZE = int(os.environ.get("UFILE_CLIENT_BYTES", 64 << 20))
CLIENTS = ("torch", "cuda_python", "maps")


def mapped_cufile():
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith("libcufile"):
                if parts[5].strip() not in seen:
                    seen.append(parts[5].strip())
    return seen


def tensors():
    import torch
    gen = torch.Generator(device="cuda").manual_seed(4321)
    src = torch.randint(0, 256, (SIZE,), dtype=torch.uint8, device="cuda", generator=gen)
    dst = torch.zeros_like(src)
    torch.cuda.synchronize()  # the cuFile calls below run outside torch's stream
    return src, dst


def run_torch(path):
    import torch
    from torch.cuda.gds import GdsFile
    src, dst = tensors()
    f = GdsFile(path, os.O_CREAT | os.O_RDWR)
    f.save_storage(src.untyped_storage(), offset=0)
    f.load_storage(dst.untyped_storage(), offset=0)
    del f
    torch.cuda.synchronize()
    return torch.equal(src, dst)


def _fill_descr(cufile, descr, fd):
    try:
        descr.type = cufile.FileHandleType.OPAQUE_FD
        descr.handle.fd = fd
        descr.fs_ops = 0
    except AttributeError:  # older bindings: write CUfileDescr_t at its address
        base = int(descr.ptr)
        ctypes.c_int.from_address(base).value = 1
        ctypes.c_int.from_address(base + 8).value = fd
        ctypes.c_void_p.from_address(base + 16).value = None


def run_cuda_python(path):
    import torch
    from cuda.bindings import cufile
    src, dst = tensors()
    cufile.driver_open()
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        descr = cufile.Descr()
        _fill_descr(cufile, descr, fd)
        fh = cufile.handle_register(int(descr.ptr))
        try:
            cufile.buf_register(src.data_ptr(), SIZE, 0)
            wrote = cufile.write(fh, src.data_ptr(), SIZE, 0, 0)
            cufile.buf_deregister(src.data_ptr())
            got = cufile.read(fh, dst.data_ptr(), SIZE, 0, 0)
        finally:
            cufile.handle_deregister(fh)
    finally:
        os.close(fd)
    torch.cuda.synchronize()
    if wrote not in (SIZE, None) or got not in (SIZE, None):  # older bindings return None
        raise RuntimeError(f"cufile.write returned {wrote}, cufile.read {got}, of {SIZE}")
    return torch.equal(src, dst)


class _Err(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class _Descr(ctypes.Structure):  # CUfileDescr_t: the handle union is 8-aligned
    _fields_ = [("type", ctypes.c_int), ("_pad", ctypes.c_int), ("fd", ctypes.c_int),
                ("_pad2", ctypes.c_int), ("fs_ops", ctypes.c_void_p)]


def run_maps(path):
    import torch
    torch.cuda.init()
    found = mapped_cufile()
    if not found:
        raise RuntimeError("no libcufile in /proc/self/maps after `import torch`")
    lib = ctypes.CDLL(found[0])  # the mapped file: dlopen returns the loaded library
    lib.cuFileDriverOpen.restype = _Err
    lib.cuFileHandleRegister.restype = _Err
    lib.cuFileHandleRegister.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_Descr)]
    for name in ("cuFileWrite", "cuFileRead"):
        getattr(lib, name).restype = ctypes.c_ssize_t
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                       ctypes.c_int64, ctypes.c_int64]
    lib.cuFileHandleDeregister.argtypes = [ctypes.c_void_p]
    st = lib.cuFileDriverOpen()
    if st.err:
        raise RuntimeError(f"cuFileDriverOpen: {st.err}")
    src, dst = tensors()
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fh, descr = ctypes.c_void_p(), _Descr(type=1, fd=fd)
        st = lib.cuFileHandleRegister(ctypes.byref(fh), ctypes.byref(descr))
        if st.err:
            raise RuntimeError(f"cuFileHandleRegister: {st.err}")
        wrote = lib.cuFileWrite(fh, src.data_ptr(), SIZE, 0, 0)
        got = lib.cuFileRead(fh, dst.data_ptr(), SIZE, 0, 0)
        lib.cuFileHandleDeregister(fh)
    finally:
        os.close(fd)
    if wrote != SIZE or got != SIZE:
        raise RuntimeError(f"cuFileWrite returned {wrote}, cuFileRead {got}, of {SIZE}")
    return torch.equal(src, dst)


def one_client(name):
    tmpdir = os.environ.get("UFILE_TEST_TMPDIR", tempfile.gettempdir())
    os.makedirs(tmpdir, exist_ok=True)
    path = os.path.join(tmpdir, f"dropin-{name}-{os.getpid()}.bin")
    out = {"client": name}
    try:
        out["exact"] = bool(globals()["run_" + name](path))
    except Exception as exc:  # noqa: BLE001 - reported, judged by the caller
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if os.path.exists(path):
            os.unlink(path)
    out["mapped"] = mapped_cufile()
    print(json.dumps(out))


def check(expect):
    from ufile import _elf
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    failures = 0
    for name in CLIENTS:
        r = subprocess.run([sys.executable, __file__, "--client", name], env=env,
                           capture_output=True, text=True, timeout=300)
        try:
            res = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            res = {"error": f"exit {r.returncode}: {r.stderr.strip()[-2000:]}", "mapped": []}
        kinds = [_elf.identify(p).kind for p in res["mapped"]]
        ok = bool(kinds) and all(k == expect for k in kinds)
        if expect == _elf.UFILE:
            ok = ok and res.get("exact") is True
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: maps {list(zip(res['mapped'], kinds))}; "
              f"byte-exact={res.get('exact')}" + (f"; error: {res['error']}" if "error" in res
                                                   else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:
        one_client(sys.argv[2])
        sys.exit(0)
    if sys.argv[1:2] != ["--expect"] or sys.argv[2] not in ("ufile", "nvidia"):
        sys.exit(__doc__)
    sys.exit(check(sys.argv[2]))
