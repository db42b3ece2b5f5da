# SPDX-License-Identifier: Apache-2.0
"""The collective load: every rank of a torch.distributed group calls it with the
same checkpoint and receives the tensors (or parts) it declared; each byte is
read from the files once, by one rank, and fanned out with all-gathers.

Sequence, the same collectives in the same order on every rank:
1. each rank reads the headers, applies ``shard`` and ``select``, and the ranks
   exchange what they found (one all_gather_object): a local error, ranks
   disagreeing on the checkpoint, the shard rules or the options make every
   rank raise before any read;
2. every rank computes the same plan (_dist_plan), allocates its tensors and
   staging buffers (two by default), and the ranks agree that this worked;
3. direct reads go straight into the rank's own tensors; the gather stream runs
   in rounds over the staging buffers (reads of the next rounds overlap the
   all-gather and copies of round i); before each round's all-gather the ranks
   agree that every read so far succeeded.
A failure on any rank is seen by all at the next agreement, and every rank
raises DistributedLoadError naming each failing rank's file, tensor and error."""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
from typing import Any, Iterator

from . import _engine
from ._dist_plan import Plan, Round, make_plan, outer_block
from ._dist_rules import ShardRule, Select, selected, split_dims
from ._format import DTYPES, Header, SafetensorError, TensorInfo

DEFAULT_MAX_DEVICE_BYTES = 1 << 30   # staging per rank, split over opts.staging_buffers


class DistributedLoadError(SafetensorError):
    """A collective load failed on at least one rank; raised on every rank.
    ``failures`` maps each failing rank to its error message."""

    def __init__(self, message: str, failures: dict | None = None):
        super().__init__(message)
        self.failures = dict(failures or {})


class _Group:
    """The collectives the load uses, on ``device``'s memory."""

    def __init__(self, group: Any, device: str):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.group = torch, dist, group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        self.device = device
        if self.rank < 0:
            raise ValueError("ufile.safetensors: this process is not a member of the group "
                             "passed as group=")
        backend = str(dist.get_backend(group))
        if device == "cpu" and backend == "nccl":
            raise ValueError("ufile.safetensors: device='cpu' needs a group whose backend "
                             "moves CPU tensors (gloo); this group's is nccl")

    def objects(self, obj: Any) -> list:
        out: list = [None] * self.size
        self.dist.all_gather_object(out, obj, group=self.group)
        return out

    def agree(self, error: str | None) -> None:
        """Raises DistributedLoadError on every rank if any rank has an error."""
        flag = self.torch.tensor([0 if error else 1], dtype=self.torch.int32,
                                 device=self.device)
        self.dist.all_reduce(flag, op=self.dist.ReduceOp.MIN, group=self.group)
        if int(flag.item()) == 1:
            return
        raise_failures(self.objects(error))

    def gather(self, buf: Any, slot: int) -> None:
        """All-gather in place: slot k of ``buf`` comes from rank k."""
        mine = buf[self.rank * slot:(self.rank + 1) * slot]
        if buf.is_cuda and hasattr(self.dist, "all_gather_into_tensor"):
            self.dist.all_gather_into_tensor(buf[:slot * self.size], mine, group=self.group)
        else:
            self.dist.all_gather(list(buf[:slot * self.size].split(slot)), mine.clone(),
                                 group=self.group)


def raise_failures(errors: list) -> None:
    failures = {r: e for r, e in enumerate(errors) if e}
    lines = "; ".join(f"rank {r}: {e}" for r, e in failures.items())
    raise DistributedLoadError(f"collective load failed on {len(failures)} of {len(errors)} "
                               f"ranks: {lines}", failures)


def checkpoint_order(headers: list[Header]) -> list:
    """Every tensor name, file by file, each file's in offset order."""
    return [n for h in headers for n in h.offset_order()]


def _fingerprint(headers: list[Header]) -> str:
    h = hashlib.sha256()
    for hd in headers:
        h.update(repr((os.path.basename(hd.path), hd.file_size, hd.data_start)).encode())
        for t in (hd.tensors[n] for n in hd.offset_order()):
            h.update(repr((t.name, t.dtype, t.shape, t.begin, t.end)).encode())
    return h.hexdigest()


def _local_state(headers_fn: Any, shard: ShardRule, select: Select, device: str,
                 round_bytes: int) -> tuple[dict, Any]:
    """What this rank found, as plain data for the exchange, and its headers."""
    try:
        headers = headers_fn()
        dims = split_dims(headers, shard)
        wanted = selected(headers, select)
        names = checkpoint_order(headers)
        return {"error": None, "fingerprint": _fingerprint(headers), "names": len(names),
                "bytes": sum(h.file_size for h in headers),
                "dims": [dims[n] for n in names], "wanted": sorted(wanted),
                "device": device.split(":")[0], "round_bytes": round_bytes}, (headers, dims)
    except Exception as exc:  # noqa: BLE001 - reported to every rank, then raised
        return {"error": f"{type(exc).__name__}: {exc}"}, None


def _check_agreement(states: list, headers: list[Header]) -> None:
    """Raises the same error on every rank when any rank failed or the ranks
    disagree on the checkpoint, the shard rules or the options."""
    if any(s["error"] for s in states):
        raise_failures([s["error"] for s in states])
    first = states[0]
    for r, s in enumerate(states[1:], 1):
        if s["fingerprint"] != first["fingerprint"]:
            raise DistributedLoadError(
                f"ranks disagree on the checkpoint: rank 0 sees {first['names']} tensors in "
                f"{first['bytes']} bytes (header digest {first['fingerprint'][:12]}), rank {r} "
                f"sees {s['names']} in {s['bytes']} (digest {s['fingerprint'][:12]})")
        for key, what in (("device", "device type"),
                          ("round_bytes", "round size (max_device_bytes / staging_buffers)")):
            if s[key] != first[key]:
                raise DistributedLoadError(f"ranks disagree on the {what}: rank 0 has "
                                           f"{first[key]!r}, rank {r} has {s[key]!r}")
        if s["dims"] != first["dims"]:
            names = checkpoint_order(headers)
            i = next(i for i, (a, b) in enumerate(zip(first["dims"], s["dims"])) if a != b)
            raise DistributedLoadError(
                f"ranks disagree on the shard rules: tensor {names[i]!r} is split along "
                f"{first['dims'][i]} on rank 0 and {s['dims'][i]} on rank {r} (None: whole)")


class _Executor:
    """Carries out this rank's side of a plan."""

    def __init__(self, plan: Plan, headers: list[Header], g: _Group, fw: Any, device: str,
                 opts: Any):
        self.plan, self.g, self.fw, self.device, self.opts = plan, g, fw, device, opts
        self.rank = g.rank
        self.parts = plan.parts[self.rank]
        self.infos = {n: t for h in headers for n, t in h.tensors.items()}
        self.paths = {n: h.path for h in headers for n in h.tensors}
        self.out: dict = {}
        self.files: dict = {}
        self.staging: list = []
        self.depth = opts.staging_buffers
        self.events: list = [None] * self.depth
        self.reader = _engine.Reader(opts.inflight)
        self.direct_futures: list = []
        self.pending = {n: 0 for n in self.parts}   # pieces not yet in place

    def prepare(self) -> str | None:
        """Allocates tensors and staging and opens the files this rank reads."""
        try:
            for name, part in self.parts.items():
                nbytes = math.prod(part.shape) * DTYPES[part.dtype][0]
                info = TensorInfo(name, part.dtype, part.shape, 0, nbytes)
                self.out[name] = self.fw.empty(info, self.paths[name], self.device)
            if self.plan.rounds:
                self.staging = [self.fw.bytes_buffer(self.plan.staging, self.device)
                                for _ in range(self.depth)]
            for rd in self.plan.direct[self.rank]:
                self._file(rd.file)
                self.pending[rd.dest] += 1
            for r in self.plan.rounds:
                for rd in r.reads[self.rank]:
                    self._file(rd.file)
                for d in r.deliveries:
                    if self.rank in d.ranks:
                        self.pending[d.name] += 1
            return None
        except Exception as exc:  # noqa: BLE001 - reported to every rank
            return f"preparing the load: {type(exc).__name__}: {exc}"

    def _file(self, i: int) -> Any:
        if i not in self.files:
            self.files[i] = _engine.open_for_read(self.plan.files[i], self.opts.direct)
        return self.files[i]

    def _submit_direct(self) -> None:
        rb = self.opts.request_bytes
        for rd in self.plan.direct[self.rank]:
            dest = self.fw.ptr(self.out[rd.dest]) + rd.dest_offset
            pieces = _engine.split(self.files[rd.file], dest, rd.size, rd.offset,
                                   f"tensor {rd.dest!r}", rb)
            self.direct_futures.append((rd.dest, self.reader.submit(pieces)))

    def _submit_round(self, i: int) -> list:
        r, buf = self.plan.rounds[i], self.staging[i % self.depth]
        futures = []
        for rd in r.reads[self.rank]:
            lo, hi = rd.dest_offset, rd.dest_offset + rd.size
            names = [d.name for d in r.deliveries
                     if d.staged < hi and lo < d.staged + d.hi - d.lo]
            what = f"tensor {names[0]!r}" if len(names) == 1 else \
                f"tensors {names[0]!r}..{names[-1]!r}"
            futures += self.reader.submit(_engine.split(
                self.files[rd.file], self.fw.ptr(buf) + rd.dest_offset, rd.size, rd.offset,
                what, self.opts.request_bytes))
        return futures

    def _first_error(self, futures: list) -> str | None:
        """Waits for ``futures``; also looks at direct reads that already ended."""
        done = [f for _, fs in self.direct_futures for f in fs if f.done()]
        for f in list(futures) + done:
            try:
                f.result()
            except Exception as exc:  # noqa: BLE001 - reported to every rank
                return f"{type(exc).__name__}: {exc}"
        return None

    def _deliver(self, r: Round, buf: Any) -> list:
        """Copies this rank's share of a gathered round into its tensors; returns
        the names completed."""
        done = []
        for d in r.deliveries:
            if self.rank not in d.ranks:
                continue
            part, info, dest = self.parts[d.name], self.infos[d.name], self.out[d.name]
            src = buf[d.staged:d.staged + d.hi - d.lo]
            if part.dim is None:
                dest.reshape(-1).view(self.fw.torch.uint8)[d.lo:d.hi].copy_(src)
            elif part.length:
                outer, block = outer_block(info, part.dim)
                o0, o1 = d.lo // block, d.hi // block
                inner = math.prod(info.shape[part.dim + 1:])
                rows = src.view(dest.dtype).view(o1 - o0, info.shape[part.dim], inner)
                dest.view(outer, part.length, inner)[o0:o1].copy_(
                    rows.narrow(1, part.start, part.length))
            self.pending[d.name] -= 1
            if self.pending[d.name] == 0:
                done.append(d.name)
        return done

    def _fence(self, k: int) -> None:
        """Waits until the copies out of staging buffer ``k`` have run."""
        if self.events[k] is not None:
            self.events[k].synchronize()
            self.events[k] = None

    def _record(self, k: int) -> None:
        if self.staging and self.staging[k].is_cuda:
            ev = self.fw.torch.cuda.Event()
            ev.record()
            self.events[k] = ev

    def run(self) -> Iterator[tuple[str, Any]]:
        """(name, tensor) as each is complete; raises on every rank on failure."""
        g, rounds = self.g, self.plan.rounds
        g.agree(self.prepare())
        for name in [n for n, c in self.pending.items() if c == 0]:
            yield name, self.out[name]   # empty tensors and empty parts
        error, futures = None, {}
        try:
            futures = {i: self._submit_round(i) for i in range(min(self.depth, len(rounds)))}
            self._submit_direct()
        except Exception as exc:  # noqa: BLE001 - reported at the next agreement
            error = f"submitting reads: {type(exc).__name__}: {exc}"
        for i, r in enumerate(rounds):
            g.agree(error or self._first_error(futures.pop(i, [])))
            buf = self.staging[i % self.depth]
            g.gather(buf, r.slot)
            try:
                done = self._deliver(r, buf)
                self._record(i % self.depth)
                if i + self.depth < len(rounds):
                    self._fence(i % self.depth)
                    futures[i + self.depth] = self._submit_round(i + self.depth)
            except Exception as exc:  # noqa: BLE001 - reported at the next agreement
                error, done = f"{type(exc).__name__}: {exc}", []
            for name in done:
                yield name, self.out[name]
        g.agree(error or self._first_error([f for _, fs in self.direct_futures for f in fs]))
        if self.device != "cpu":
            self.fw.torch.cuda.current_stream().synchronize()
        for name, _ in self.direct_futures:
            self.pending[name] -= 1
            if self.pending[name] == 0:
                yield name, self.out[name]

    def close(self) -> None:
        self.reader.close()   # cancels what has not started, waits for the rest
        for f in self.files.values():
            f.close()
        self.files = {}


def collective(headers_fn: Any, fw: Any, device: str, group: Any, shard: ShardRule,
               select: Select, opts: Any) -> Iterator[tuple[str, Any]]:
    """The collective load as an iterator of (name, tensor); ``headers_fn``
    reads and checks the checkpoint's headers on this rank."""
    if fw.name != "pt":
        raise ValueError("ufile.safetensors: a collective load (group=...) returns torch "
                         "tensors: framework must be 'pt'")
    if opts.register_buffers:
        raise ValueError("ufile.safetensors: register_buffers is not supported with group=")
    import torch
    opts = opts.resolved()
    max_bytes = DEFAULT_MAX_DEVICE_BYTES if opts.max_device_bytes is None \
        else int(opts.max_device_bytes)
    if not isinstance(opts.staging_buffers, int) or opts.staging_buffers < 2:
        raise ValueError(f"ufile.safetensors: staging_buffers must be an int of at least 2, "
                         f"not {opts.staging_buffers!r}")
    round_bytes = max_bytes // opts.staging_buffers
    g = _Group(group, device)
    ctx = torch.cuda.device(device) if device != "cpu" else contextlib.nullcontext()
    with ctx:
        state, local = _local_state(headers_fn, shard, select, device, round_bytes)
        states = g.objects(state)
        _check_agreement(states, local[0] if local else [])
        headers, dims = local
        plan = make_plan(headers, dims, [set(s["wanted"]) for s in states], round_bytes)
        ex = _Executor(plan, headers, g, fw, device, opts)
        try:
            yield from ex.run()
        finally:
            ex.close()
