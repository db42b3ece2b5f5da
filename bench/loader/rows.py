# SPDX-License-Identifier: Apache-2.0
"""The loaders and baselines the benchmark times; each returns name -> tensor
on the GPU (or, for the ceilings, a byte count)."""
from __future__ import annotations

import concurrent.futures as cf
import glob
import mmap
import os
import time

import torch

GIB = 1 << 30


def shard_files(dirname: str) -> list[str]:
    return sorted(glob.glob(os.path.join(dirname, "*.safetensors")))


def pinned_ceiling(nbytes: int = GIB, reps: int = 8) -> float:
    """GB/s of cudaMemcpyAsync from pinned host memory to the GPU (the PCIe ceiling)."""
    src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    return nbytes * reps / (time.perf_counter() - t0) / 1e9


def raw_odirect(files: list[str], threads: int = 16, chunk: int = 16 << 20) -> int:
    """Reads every byte of the files with O_DIRECT preadv into host memory (the
    storage ceiling for the same bytes); returns bytes read."""
    return raw_odirect_ranges([(p, 0, os.path.getsize(p)) for p in files], threads, chunk)


def raw_odirect_ranges(ranges: list, threads: int = 16, chunk: int = 16 << 20) -> int:
    """raw_odirect over (path, offset, size) ranges, in chunks of ``chunk``
    (each read widened to the 4 KiB blocks O_DIRECT needs; only the range's
    bytes are counted)."""
    def read(fd: int, buf: mmap.mmap, off: int, n: int) -> int:
        lo = off // 4096 * 4096
        want = (off + n - lo + 4095) // 4096 * 4096
        got = os.preadv(fd, [memoryview(buf)[:want]], lo)
        return max(0, min(got - (off - lo), n))
    return _raw_ranges(ranges, threads, chunk, os.O_DIRECT, read)


def raw_buffered_ranges(ranges: list, threads: int = 16, chunk: int = 16 << 20) -> int:
    """Buffered preadv of (path, offset, size) ranges in chunks of ``chunk``
    (the kernel's readahead, told the access is sequential); returns bytes read."""
    def read(fd: int, buf: mmap.mmap, off: int, n: int) -> int:
        return os.preadv(fd, [memoryview(buf)[:n]], off)
    return _raw_ranges(ranges, threads, chunk, 0, read)


def _raw_ranges(ranges: list, threads: int, chunk: int, flags: int, read) -> int:
    """``read(fd, buffer, offset, size)`` over every chunk of the ranges on
    ``threads`` threads, each with a buffer of its own; the bytes read."""
    jobs = [(p, o, min(chunk, off + size - o)) for p, off, size in ranges
            for o in range(off, off + size, chunk)]
    fds = {p: os.open(p, os.O_RDONLY | flags) for p, _, _ in ranges}
    if not flags & os.O_DIRECT:
        for fd in fds.values():
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    bufs = [mmap.mmap(-1, chunk + 8192) for _ in range(threads)]
    free = list(range(threads))

    def one(job):
        path, off, n = job
        slot = free.pop()
        try:
            return read(fds[path], bufs[slot], off, n)
        finally:
            free.append(slot)
    try:
        with cf.ThreadPoolExecutor(threads) as pool:
            return sum(pool.map(one, jobs))
    finally:
        for fd in fds.values():
            os.close(fd)


def safetensors_cuda(dirname: str) -> dict:
    from safetensors.torch import load_file
    out = {}
    for f in shard_files(dirname):
        out.update(load_file(f, device="cuda"))
    return out


def safetensors_cpu_then_cuda(dirname: str) -> dict:
    from safetensors.torch import load_file
    out = {}
    for f in shard_files(dirname):
        out.update({k: v.to("cuda") for k, v in load_file(f, device="cpu").items()})
    return out


def ufile_load(dirname: str, **options) -> dict:
    from ufile.safetensors import load_checkpoint
    return load_checkpoint(dirname, device="cuda", **options)


def model_from_ufile(dirname: str, **options):
    """A LlamaForCausalLM built on the meta device, its weights assigned from
    ufile's loader (views, no copy), non-persistent buffers made on the GPU."""
    from transformers import AutoConfig, LlamaForCausalLM
    config = AutoConfig.from_pretrained(dirname)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    model.load_state_dict(ufile_load(dirname, **options), strict=True, assign=True)
    rotary = model.model.rotary_emb
    with torch.device("cuda"):
        model.model.rotary_emb = type(rotary)(config=config)
    left = [n for n, b in model.named_buffers() if b.is_meta]
    left += [n for n, p in model.named_parameters() if p.is_meta]
    if left:
        raise RuntimeError(f"still on the meta device: {left[:5]}")
    return model.eval()


def model_from_pretrained(dirname: str):
    from transformers import LlamaForCausalLM
    return LlamaForCausalLM.from_pretrained(dirname, device_map="cuda",
                                            dtype=torch.bfloat16).eval()


def ufile_reads_only(dirname: str, inflight: int, request_bytes: int):
    """ufile's reads alone: per-file device buffers allocated (and cached by
    torch) before the clock starts; returns (seconds, tensors) for checking."""
    from ufile.safetensors import _engine, _format, _frameworks, checkpoint_files
    fw = _frameworks.Torch()
    headers = [_format.read_header(f) for f in checkpoint_files(dirname)]
    bufs = [torch.empty(h.file_size, dtype=torch.uint8, device="cuda") for h in headers]
    files = [_engine.open_for_read(h.path, True) for h in headers]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with _engine.Reader(inflight) as reader:
        futs = []
        for f, b, h in zip(files, bufs, headers):
            futs += reader.submit(_engine.split(f, b.data_ptr(), h.file_size, 0, "data",
                                                request_bytes))
        _engine.wait_all(futs)
    sec = time.perf_counter() - t0
    for f in files:
        f.close()
    out = {}
    for b, h in zip(bufs, headers):
        out.update({n: fw.from_bytes(b, h.data_start + i.begin, i, h.path)
                    for n, i in h.tensors.items()})
    return sec, out
