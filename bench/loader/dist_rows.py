# SPDX-License-Identifier: Apache-2.0
"""The rank side of bench_dist.py: one row, run by every rank of a fresh
torch.distributed.run group; rank 0 writes the row's JSON."""
from __future__ import annotations

import glob
import json
import os
import re
import time

T_START = time.perf_counter()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

GIB = 1 << 30


def files_of(d: str) -> list:
    return sorted(glob.glob(os.path.join(d, "*.safetensors")))


def dim_for(rules: dict | None, name: str):
    for pat, dim in (rules or {}).items():
        if re.search(pat, name):
            return dim
    return None


def digest(t: torch.Tensor) -> int:
    """A position-weighted sum of the tensor's 32-bit words (wrapping int64)."""
    b = t.contiguous().reshape(-1).view(torch.uint8)
    if b.numel() % 4:
        b = torch.cat([b, b.new_zeros(4 - b.numel() % 4)])
    w, acc, step = b.view(torch.int32), 0, 1 << 26
    for lo in range(0, w.numel(), step):
        part = w[lo:lo + step].to(torch.int64)
        idx = torch.arange(lo, lo + part.numel(), device=t.device, dtype=torch.int64)
        acc += int(((part + 7) * (idx % 1000003 + 1) + idx).sum().item())
    return acc & ((1 << 63) - 1)


def _slices(fh, name: str, rules, rank: int, n: int):
    dim = dim_for(rules, name)
    if dim is None:
        return fh.get_tensor(name)
    sl = fh.get_slice(name)
    return sl[_part(tuple(sl.get_shape()), dim, rank, n)[1]]


def per_rank(opener, d: str, rules, rank: int, n: int) -> dict:
    """Part ``rank`` of ``n`` of every tensor, on this process's GPU."""
    out, device = {}, f"cuda:{torch.cuda.current_device()}"
    for f in files_of(d):
        with opener(f, framework="pt", device=device) as fh:
            for name in fh.keys():
                out[name] = _slices(fh, name, rules, rank, n)
    return out


def row_safetensors(a, rank, n, rules):
    if rules is None:
        from safetensors.torch import load_file
        out = {}
        for f in files_of(a.dir):
            out.update(load_file(f, device=f"cuda:{rank}"))
        return out
    from safetensors import safe_open
    return per_rank(safe_open, a.dir, rules, rank, n)


def row_ufile(a, rank, n, rules):
    if rules is None:
        from ufile.safetensors import load_checkpoint
        return load_checkpoint(a.dir, device="cuda")
    from ufile.safetensors import safe_open
    return per_rank(safe_open, a.dir, rules, rank, n)


def row_collective(a, rank, n, rules):
    from ufile.safetensors import load_checkpoint
    return load_checkpoint(a.dir, device="cuda", group=dist.group.WORLD, shard=rules,
                           **json.loads(a.collective_options))


def _share(d: str, rank: int, n: int) -> list:
    """This rank's 1/n of the concatenated files: (path, offset, size)."""
    sizes = [(f, os.path.getsize(f)) for f in files_of(d)]
    total = sum(s for _, s in sizes)
    lo, hi = total * rank // n // 4096 * 4096, total * (rank + 1) // n // 4096 * 4096
    if rank == n - 1:
        hi = total
    out, pos = [], 0
    for f, s in sizes:
        a, z = max(lo, pos), min(hi, pos + s)
        if a < z:
            out.append((f, a - pos, z - a))
        pos += s
    return out


def row_share(a, rank, n, rules):
    """The bound: this rank reads only its share of the bytes into its GPU."""
    from ufile.safetensors import _engine
    share = _share(a.dir, rank, n)
    buf = torch.empty(sum(s for _, _, s in share), dtype=torch.uint8, device="cuda")
    files = [_engine.open_for_read(f, True) for f, _, _ in share]
    pos, futs = 0, []
    with _engine.Reader(_engine.inflight_default()) as reader:
        for fh, (_, off, size) in zip(files, share):
            futs += reader.submit(_engine.split(fh, buf.data_ptr() + pos, size, off, "share",
                                                _engine.request_bytes_default()))
            pos += size
        _engine.wait_all(futs)
    for fh in files:
        fh.close()
    return pos


def row_raw(a, rank, n, rules):
    """Raw O_DIRECT preadv of this rank's share into host memory (16 threads)."""
    import rows
    return rows.raw_odirect_ranges(_share(a.dir, rank, n))


def row_rawbuf(a, rank, n, rules):
    """Raw buffered preadv (kernel readahead) of this rank's share into host
    memory (16 threads of 16 MiB reads)."""
    import rows
    return rows.raw_buffered_ranges(_share(a.dir, rank, n))


def _read_ranges(ranges: list, buf: torch.Tensor) -> None:
    """ufile reads of (path, offset, size) ranges back to back into ``buf``."""
    from ufile.safetensors import _engine
    files = {p: _engine.open_for_read(p, True) for p, _, _ in ranges}
    pos, futs = 0, []
    with _engine.Reader(_engine.inflight_default()) as reader:
        for p, off, size in ranges:
            futs += reader.submit(_engine.split(files[p], buf.data_ptr() + pos, size, off,
                                                p, _engine.request_bytes_default()))
            pos += size
        _engine.wait_all(futs)
    for f in files.values():
        f.close()


def _views(bufs: list, d: str) -> dict:
    """Every tensor of the checkpoint as a view of the whole files' bytes."""
    from ufile.safetensors import _format, _frameworks
    fw, out = _frameworks.Torch(), {}
    for b, f in zip(bufs, files_of(d)):
        h = _format.read_header(f)
        out.update({k: fw.from_bytes(b, h.data_start + i.begin, i, f)
                    for k, i in h.tensors.items()})
    return out


def row_proto(a, rank, n, rules):
    """The prototype: rank r reads whole files r, r+n, ... into flat device
    buffers, then one NCCL broadcast per file."""
    files = files_of(a.dir)
    bufs = [torch.empty(os.path.getsize(f), dtype=torch.uint8, device="cuda") for f in files]
    for i in range(rank, len(files), n):
        _read_ranges([(files[i], 0, os.path.getsize(files[i]))], bufs[i])
    for i, b in enumerate(bufs):
        dist.broadcast(b, i % n)
    return _views(bufs, a.dir)


def row_gather(a, rank, n, rules):
    """Each rank reads its share of the concatenated files into its slot of a
    preallocated buffer, then one all-gather completes it in place."""
    files = files_of(a.dir)
    total = sum(os.path.getsize(f) for f in files)
    slot = -(-total // n // 4096) * 4096
    flat = torch.empty(slot * n, dtype=torch.uint8, device="cuda")
    lo, hi = rank * slot, min(total, (rank + 1) * slot)
    ranges, pos = [], 0
    for f in files:
        size = os.path.getsize(f)
        x, z = max(lo, pos), min(hi, pos + size)
        if x < z:
            ranges.append((f, x - pos, z - x))
        pos += size
    mine = flat[rank * slot:(rank + 1) * slot]
    _read_ranges(ranges, mine)
    dist.all_gather_into_tensor(flat, mine)
    bufs, pos = [], 0
    for f in files:
        size = os.path.getsize(f)
        bufs.append(flat[pos:pos + size])
        pos += size
    return _views(bufs, a.dir)


def row_nccl(a, rank, n, rules, nbytes: int = GIB, reps: int = 5) -> dict:
    buf = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    big = torch.empty(nbytes * n, dtype=torch.uint8, device="cuda")
    out = {}
    for label, op in (("broadcast_GBps_per_receiver", lambda: dist.broadcast(buf, 0)),
                      ("all_gather_GBps_received_per_gpu",
                       lambda: dist.all_gather_into_tensor(big, buf))):
        op()
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            op()
        torch.cuda.synchronize()
        dist.barrier()
        moved = nbytes * reps * (1 if "broadcast" in label else n - 1)
        out[label] = round(moved / (time.perf_counter() - t0) / 1e9, 1)
    return out


def _layout(d: str) -> list:
    """(name, shape, torch dtype) of every tensor, file by file."""
    from ufile.safetensors import _format, _frameworks
    fw, out = _frameworks.Torch(), []
    for f in files_of(d):
        h = _format.read_header(f)
        out += [(n, tuple(h.tensors[n].shape), fw.dtype(h.tensors[n], f))
                for n in h.offset_order()]
    return out


def _part(shape: tuple, dim, rank: int, n: int) -> tuple:
    """(shape of this rank's part, its source slices): tensor_split's, as the
    collective load's shard rules cut."""
    if dim is None:
        return shape, None
    dim %= len(shape)
    base, extra = divmod(shape[dim], n)
    lo = rank * base + min(rank, extra)
    size = base + (1 if rank < extra else 0)
    part = tuple(size if d == dim else s for d, s in enumerate(shape))
    return part, tuple(slice(lo, lo + size) if d == dim else slice(None)
                       for d in range(len(shape)))


def prepare_model(a, rank, n, rules) -> dict:
    """The model's own tensors, allocated before the clock: what load_into and
    dcp.load fill ({name: (tensor, source slices or None)})."""
    model = {}
    for name, shape, dt in _layout(a.dir):
        part, source = _part(shape, dim_for(rules, name), rank, n)
        model[name] = (torch.empty(part, dtype=dt, device="cuda"), source)
    return model


def row_into(a, rank, n, rules, model):
    """load_into of the preallocated model (its parts under the rules)."""
    from ufile.safetensors import load_into
    targets = {k: t if src is None else [(t, None, src)] for k, (t, src) in model.items()}
    load_into(a.dir, targets, group=dist.group.WORLD)
    return {k: t for k, (t, _) in model.items()}


def _dcp_row(a, model, reader) -> dict:
    import torch.distributed.checkpoint as dcp
    if a.mode != "replicas":
        raise ValueError("the dcp rows load replicas (--mode replicas): plain tensors of a "
                         "part's shape are not what DCP's planner expects")
    state = {k: t for k, (t, _) in model.items()}
    dcp.load(state, storage_reader=reader)
    return state


def row_dcp(a, rank, n, rules, model):
    """dcp.load of the preallocated (replicated) model through UfileStorageReader."""
    from ufile.safetensors import UfileStorageReader
    return _dcp_row(a, model, UfileStorageReader(a.dir))


def row_dcp_torch(a, rank, n, rules, model):
    """dcp.load of the same through torch's HuggingFaceStorageReader."""
    from torch.distributed.checkpoint import HuggingFaceStorageReader
    return _dcp_row(a, model, HuggingFaceStorageReader(a.dir))


def make_mesh(n: int):
    """A 2 x n/2 DeviceMesh (data parallel x tensor parallel), made before the clock."""
    from torch.distributed.device_mesh import init_device_mesh
    if n % 2:
        raise ValueError(f"the mesh row needs an even number of ranks, not {n}")
    return init_device_mesh("cuda", (2, n // 2), mesh_dim_names=("dp", "tp"))


def row_mesh(a, rank, n, rules, mesh):
    """DTensors on the 2 x n/2 mesh: the tensor-parallel rules on its second
    dimension, replicas across its first; each byte read once in the world."""
    from torch.distributed.tensor import Replicate, Shard
    from ufile.safetensors import load_dtensors
    if rules is None:
        raise ValueError("the mesh row splits by the tensor-parallel rules (--mode tp)")
    placements = {pat: [Replicate(), Shard(dim)] for pat, dim in rules.items()}
    return {k: v.to_local() for k, v in load_dtensors(a.dir, mesh, placements).items()}


def mesh_reference(a, out: dict, rank: int, n: int, rules) -> str:
    """The mesh row's parts against what the safetensors package reads for
    this rank's tensor-parallel coordinate (n/2 parts)."""
    from safetensors import safe_open
    m = n // 2
    want = per_rank(safe_open, a.dir, rules, rank % m, m)
    bad = [k for k, v in want.items() if k not in out or digest(v) != digest(out[k])]
    if set(out) != set(want):
        return f"FAIL names differ: {sorted(set(out) ^ set(want))[:3]}"
    return "ok" if not bad else f"FAIL {len(bad)} differ: {bad[:3]}"


ROWS = {"safetensors": row_safetensors, "ufile": row_ufile, "collective": row_collective,
        "share": row_share, "raw": row_raw, "rawbuf": row_rawbuf, "nccl": row_nccl,
        "proto": row_proto, "gather": row_gather, "into": row_into, "dcp": row_dcp,
        "dcp_torch": row_dcp_torch, "mesh": row_mesh}
PREPARED = {"into", "dcp", "dcp_torch"}   # rows filling a model allocated before the clock


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def check(out: dict, refdir: str, rank: int, save: bool) -> str:
    sums = {k: digest(v) for k, v in out.items()}
    path = os.path.join(refdir, f"ref-{rank}.json")
    if save:
        with open(path, "w") as f:
            json.dump(sums, f)
        return "reference"
    with open(path) as f:
        ref = json.load(f)
    if set(ref) != set(sums):
        return f"FAIL names differ: {sorted(set(ref) ^ set(sums))[:3]}"
    bad = [k for k in ref if ref[k] != sums[k]]
    return "ok" if not bad else f"FAIL {len(bad)} differ: {bad[:3]}"


def plain_cost(out: dict) -> int:
    """What torch.empty of the same outputs costs in the caching allocator's
    count (its rounding included); ``out``'s own storages are freed first."""
    shapes = [(t.shape, t.dtype) for t in out.values()]
    out.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    held = [torch.empty(s, dtype=d, device="cuda") for s, d in shapes]
    cost = torch.cuda.memory_allocated() - base
    del held
    return cost


def worker(a) -> int:
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    torch.empty(1, device="cuda")
    t_cuda = time.perf_counter()
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    x = torch.ones(1, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    t_nccl = time.perf_counter()
    n = dist.get_world_size()
    rules = None
    if a.mode == "tp":
        import bench_dist
        rules = bench_dist.LLAMA_TP
    fn = ROWS[a.worker]
    reps = min(a.reps, 2) if a.cache == "cold" else a.reps  # first load and one repeat
    if a.worker in ("safetensors", "raw", "rawbuf"):
        reps = 1
    if a.worker == "collective" and a.trace:
        os.environ["UFILE_DIST_TRACE"] = os.path.join(a.trace, f"{a.mode}-{a.cache}-{n}")
    times, extras, checks, figures = [], [], [], None
    mesh = make_mesh(n) if a.worker == "mesh" else None
    total = sum(os.path.getsize(f) for f in files_of(a.dir))
    for rep in range(reps):
        dist.barrier()
        if a.cache == "cold" and rank == 0:
            drop_caches()
        dist.barrier()
        model = prepare_model(a, rank, n, rules) if a.worker in PREPARED else mesh
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        out = fn(a, rank, n, rules) if model is None else fn(a, rank, n, rules, model)
        torch.cuda.synchronize()
        dist.barrier()
        times.append(time.perf_counter() - t0)
        if isinstance(out, dict) and out and isinstance(next(iter(out.values())), torch.Tensor):
            peak = torch.cuda.max_memory_allocated() - base
            if rep == 0 and a.worker == "mesh":
                checks.append(mesh_reference(a, out, rank, n, rules))
            elif rep == 0:
                checks.append(check(out, a.refdir, rank,
                                    save=a.worker == "safetensors" and a.cache == "hot"))
            # a prepared model is outside ``base``: the peak is all extra
            extras.append(peak if a.worker in PREPARED else peak - plain_cost(out))
        elif isinstance(out, dict):
            figures = out
        del out, model
    res = {"times": times, "extra": max(extras) if extras else None, "extras": extras,
           "check": checks[0] if checks else None, "figures": figures,
           "setup_cuda_s": t_cuda - T_START, "setup_nccl_s": t_nccl - t_cuda}
    every = [None] * n
    dist.all_gather_object(every, res)
    if rank == 0:
        first = [e["times"][0] for e in every]
        best = min(max(e["times"][i] for e in every) for i in range(len(times)))
        row = {"row": a.worker, "mode": a.mode, "cache": a.cache, "ranks": n,
               "options": json.loads(a.collective_options) if a.worker == "collective" else {},
               "first_s": round(max(first), 3), "best_s": round(best, 3),
               "runs_s": [round(max(e["times"][i] for e in every), 3) for i in range(len(times))],
               "GBps_first": round(total / max(first) / 1e9, 1),
               "GBps_best": round(total / best / 1e9, 1),
               "setup_cuda_s": round(max(e["setup_cuda_s"] for e in every), 2),
               "setup_nccl_s": round(max(e["setup_nccl_s"] for e in every), 2),
               "checkpoint_bytes": total}
        if extras:
            row["extra_GiB_max"] = round(max(e["extra"] for e in every) / GIB, 3)
            row["extra_GiB_runs"] = [round(max(e["extras"][i] for e in every) / GIB, 3)
                                     for i in range(len(extras))]
            row["checks"] = [e["check"] for e in every]
        if figures:
            row["figures"] = figures
        with open(a.json, "w") as f:
            json.dump(row, f)
    dist.destroy_process_group()
    return 0
