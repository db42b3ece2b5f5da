# SPDX-License-Identifier: Apache-2.0
"""The collective save: every rank of a torch.distributed group calls
save_checkpoint with its tensors (replicas, or its parts under ``shard``) and
the same directory; the result is one ordinary checkpoint of the full tensors,
every byte written once, the ranks writing in parallel into the same files.

Sequence, the same collectives in the same order on every rank:
1. each rank checks its state dict (the safetensors package's refusals) and
   applies ``shard``; the ranks exchange what they hold (all_gather_object);
   any rank's error, or ranks disagreeing, makes every rank raise
   DistributedSaveError before anything is written;
2. every rank computes the same plan (_save_dist_plan); rank 0 takes the
   directory's lock and creates the files under temporary names, and the ranks
   agree that this worked;
3. each rank writes its own bytes through ufile in the background while the
   tensors split along an inner dimension are gathered to their writer (one
   gather each, in plan order) and written there; each rank flushes (fsync)
   the files it wrote; the ranks agree that every write worked;
4. rank 0 puts the checkpoint in place (_save_commit: crash-safe, the index
   last) and the ranks agree on the outcome.
A failure anywhere makes every rank raise DistributedSaveError naming each
failing rank and its error; the previous checkpoint stays in place and rank 0
removes the temporary files. A rank that dies cannot report: the others raise
when the backend notices (gloo: at once; NCCL: within the group's timeout)."""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

from . import _save_io
from ._save_commit import commit, lock, unlock
from ._save_dist_plan import Held, SavePlan, make_save_plan, writes_of
from ._save_inputs import torch_entries
from ._save_write import WriteOptions, _failure, _mode_for, _remove, temp_name, write_pieces
from ._dist_rules import ShardRule, TpShard, split_dims
from ._format import Header, TensorInfo
from ._timeline import Timeline


class DistributedSaveError(RuntimeError):
    """A collective save failed on at least one rank; raised on every rank.
    ``failures`` maps each failing rank to its error message."""

    def __init__(self, message: str, failures: dict | None = None):
        super().__init__(message)
        self.failures = dict(failures or {})


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Agree:
    """One all_gather_object per agreement point; raises DistributedSaveError
    on every rank when any rank reports an error."""

    def __init__(self, group: Any):
        import torch.distributed as dist
        self.dist, self.group = dist, group
        self.rank, self.size = dist.get_rank(group), dist.get_world_size(group)

    def gather(self, value: Any) -> list:
        out: list = [None] * self.size
        self.dist.all_gather_object(out, value, group=self.group)
        return out

    def check(self, step: str, error: str | None, value: Any = None) -> list:
        got = self.gather((error, value))
        failures = {r: e for r, (e, _) in enumerate(got) if e}
        if failures:
            lines = "; ".join(f"rank {r}: {m}" for r, m in sorted(failures.items()))
            raise DistributedSaveError(f"collective save failed {step}: {lines}", failures)
        return [v for _, v in got]


def _declare(state_dict: Any, shard: ShardRule, meta: dict) -> tuple[dict, set]:
    """(what this rank holds, {name: Held}; the patterns of a ``shard``
    mapping that took a tensor here). A callable rule is called with the
    shape of this rank's tensor (its part)."""
    entries = torch_entries(state_dict, meta)
    tensors = {e.name: TensorInfo(e.name, e.dtype, e.shape, 0, 0) for e in entries}
    header = Header("the state dict", 0, 0, None, tensors)
    rules = TpShard(shard) if isinstance(shard, Mapping) else shard
    dims = split_dims([header], rules)
    used = set()
    if isinstance(shard, Mapping):
        for name in tensors:
            hit = next((p for p in shard if re.search(p, name)), None)
            if hit is not None:
                used.add(hit)
    return {e.name: Held(e.dtype, e.shape, dims[e.name]) for e in entries}, used


def _unused(shard: ShardRule, used: list[set]) -> list[str]:
    """Patterns of a ``shard`` mapping that took a tensor on no rank (a typo
    would save each rank's part as if it were the whole tensor)."""
    if not isinstance(shard, Mapping):
        return []
    optional = getattr(shard, "optional", frozenset())
    taken = set().union(*used)
    return [p for p in shard if p not in taken and p not in optional]


def save_collective(state_dict: Any, directory: str, group: Any, shard: ShardRule,
                    max_shard_size: Any, meta: dict, opts: WriteOptions) -> None:
    agree = _Agree(group)
    rank = agree.rank
    tl = Timeline("UFILE_SAVE_TRACE")
    try:
        _save_collective(agree, tl, state_dict, directory, group, shard, max_shard_size, meta,
                         opts)
    finally:
        tl.write(rank)


def _save_collective(agree: _Agree, tl: Timeline, state_dict: Any, directory: str, group: Any,
                     shard: ShardRule, max_shard_size: Any, meta: dict,
                     opts: WriteOptions) -> None:
    rank = agree.rank
    try:
        (decl, used), error = _declare(state_dict, shard, meta), None
    except Exception as exc:  # noqa: BLE001 - reported to every rank
        decl, used, error = None, set(), _describe(exc)
    same = (directory, repr(max_shard_size), sorted(meta.items()), opts.direct,
            repr(sorted(shard.items())) if isinstance(shard, Mapping) else None)
    got = agree.check("checking the state dicts", error, (decl, used, same))
    tl.note("state dicts agreed")
    for r, (_, _, s) in enumerate(got):
        if s != got[0][2]:
            raise DistributedSaveError(f"collective save: rank {r} passed a different "
                                       f"directory, max_shard_size, metadata, direct or shard "
                                       f"than rank 0 ({s} against {got[0][2]})",
                                       {r: "differs"})
    unused = _unused(shard, [u for _, u, _ in got])
    if unused:
        raise DistributedSaveError(f"collective save: shard patterns {unused} match no tensor "
                                   f"on any rank: a mistyped pattern would save each rank's "
                                   f"part as the whole tensor; fix or remove them", {})
    try:
        plan = make_save_plan([d for d, _, _ in got], max_shard_size, meta)
    except ValueError as exc:
        raise DistributedSaveError(f"collective save: {exc}", {}) from None
    lock_fd, tmps = None, {}
    try:
        error = None
        if rank == 0:
            try:
                os.makedirs(directory, exist_ok=True)
                lock_fd = lock(directory)
                tmps = _create(directory, plan, opts)
            except Exception as exc:  # noqa: BLE001 - reported to every rank
                error = _describe(exc)
        tmps = agree.check("creating the files", error, tmps)[0]
        tl.note("files created")
        error = _write_share(plan, rank, group, state_dict, directory, tmps, opts, tl)
        agree.check("writing", error)
        tl.note("writes agreed")
        error = None
        if rank == 0:
            try:
                commit(directory, dict(tmps), plan.index)
                tmps = {}
            except Exception as exc:  # noqa: BLE001 - reported to every rank
                error = _describe(exc)
        agree.check("putting the checkpoint in place", error)
        tl.note("committed")
    finally:
        if rank == 0:
            for tmp in tmps.values():
                _remove(tmp)
            if lock_fd is not None:
                unlock(lock_fd)


def _create(directory: str, plan: SavePlan, opts: WriteOptions) -> dict[str, str]:
    """Rank 0: every file, empty and of its final size, under a temporary name."""
    io = _save_io.IO
    out: dict[str, str] = {}
    try:
        for f in plan.files:
            final = os.path.join(directory, f.name)
            tmp = temp_name(final)
            try:
                h = io.open(tmp, False)
            except OSError as exc:
                raise _failure(exc, final, f"creating {tmp}") from exc
            out[f.name] = tmp
            try:
                os.fchmod(h.fileno(), _mode_for(final))
                io.allocate(h.fileno(), f.total)
                os.ftruncate(h.fileno(), f.total)
            except OSError as exc:
                raise _failure(exc, final, f"reserving {f.total} bytes") from exc
            finally:
                h.close()
    except BaseException:
        for tmp in out.values():
            _remove(tmp)
        raise
    return out


GATHER_BUDGET = 1 << 30  # gathered bytes a writer holds while their writes are in flight
# Test seam: run on the CUDA stream between a gather and the joining of its
# pieces (a delay there shows that the write waits for the joined bytes).
after_gather: Any = None


def _chunks(what: str, src: Any, offset: int, size: int, request: int) -> list[tuple]:
    return [(what, src, min(request, size - off), offset + off, off)
            for off in range(0, size, request)]


def _gather_one(t: Any, rank: int, group: Any, state_dict: dict) -> Any:
    """One inner-split tensor gathered whole to its writer (a collective):
    the tensor's bytes there, None elsewhere."""
    import torch
    import torch.distributed as dist
    dev = torch.device("cuda", torch.cuda.current_device()) \
        if str(dist.get_backend(group)) == "nccl" else torch.device("cpu")
    outer = t.nbytes // (t.shape[t.dim] * t.row_bytes())
    mine = torch.zeros(outer * max(size for _, size in t.parts) * t.row_bytes(),
                       dtype=torch.uint8, device=dev)
    flat = state_dict[t.name].reshape(-1).view(torch.uint8)
    mine[:flat.numel()].copy_(flat)
    bufs = [torch.empty_like(mine) for _ in t.parts] if rank == t.writer else None
    dst = t.writer if group is None or group is dist.group.WORLD else \
        dist.get_global_rank(group, t.writer)
    dist.gather(mine, bufs, dst=dst, group=group)
    if rank != t.writer:
        return None
    if after_gather is not None and dev.type == "cuda":
        after_gather()
    pieces = [b[:outer * size * t.row_bytes()].view(outer, size * t.row_bytes())
              for b, (_, size) in zip(bufs, t.parts)]
    return torch.cat(pieces, dim=1).reshape(-1)


def _ready_event(full: Any) -> Any:
    """An event behind the joining of a gathered tensor on its CUDA stream
    (ufile reads device memory outside any stream), or None on the CPU."""
    if not getattr(full, "is_cuda", False):
        return None
    import torch
    ev = torch.cuda.Event()
    ev.record()
    return ev


def _write_joined(ready: Any, f: Any, final: str, chunks: list, opts: WriteOptions) -> None:
    if ready is not None:
        ready.synchronize()
    write_pieces(f, final, chunks, opts)


def _own_chunks(plan: SavePlan, mine: dict, state_dict: dict, rank: int,
                opts: WriteOptions) -> list[tuple[str, list]]:
    """(file, chunks) of this rank's own bytes (headers and tensors, not the
    gathered ones), the plan's file order rotated by the rank: a buffered
    write holds its file's inode lock, so ranks that began in the same file
    would take turns in it."""
    heads = {f.name: f.head for f in plan.files}
    out = []
    for fname, pieces in mine.items():
        chunks = []
        for what, name, kind, offset, size in pieces:
            if kind != "gather":
                src = heads[fname] if kind == "header" else state_dict[name]
                chunks += _chunks(what, src, offset, size, opts.request_bytes)
        out.append((fname, chunks))
    return _rotated(out, rank)


def _rotated(items: list, rank: int) -> list:
    """``items`` from the rank's place on: ranks that work through the same
    files in turn each start in another one."""
    start = rank % len(items) if items else 0
    return items[start:] + items[:start]


def _write_own(files: dict, directory: str, jobs: list[tuple[str, list]], opts: WriteOptions,
               tl: Timeline) -> None:
    for fname, chunks in jobs:
        write_pieces(files[fname], os.path.join(directory, fname), chunks, opts)
        tl.note("own bytes written", fname, sum(c[2] for c in chunks))


def _write_share(plan: SavePlan, rank: int, group: Any, state_dict: dict, directory: str,
                 tmps: dict, opts: WriteOptions, tl: Timeline) -> str | None:
    """This rank's bytes, written and flushed; its error, or None. Its own
    bytes are written in the background from the start; meanwhile the gathers
    run, in plan order on every rank whatever failed here, so no rank waits
    in a gather for another's own writes. Each gathered tensor is written by
    its writer in the background too (at most GATHER_BUDGET bytes held)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor
    io = _save_io.IO
    mine = writes_of(plan, rank)
    files: dict = {}
    error = None
    own = None
    pending: deque = deque()
    held = 0
    # One thread for the own bytes, one for the gathered tensors in turn.
    with ThreadPoolExecutor(2, thread_name_prefix="ufile-save-write") as writer:
        try:
            sources = [v for v in state_dict.values() if getattr(v, "is_cuda", False)]
            if sources:
                import torch
                for d in {v.device for v in sources}:
                    torch.cuda.synchronize(d)
            for fname in mine:
                files[fname] = io.open_existing(tmps[fname], opts.direct)
            own = writer.submit(_write_own, files, directory,
                                _own_chunks(plan, mine, state_dict, rank, opts), opts, tl)
        except Exception as exc:  # noqa: BLE001 - reported to every rank
            error = _describe(exc)
        for t in plan.tensors:
            if t.kind != "gather" or not t.nbytes:
                continue
            try:
                full = _gather_one(t, rank, group, state_dict)
            except Exception as exc:  # noqa: BLE001 - a transport failure: stop here
                error = error or _describe(exc)
                break
            tl.note("gathered", t.name, t.writer)
            if full is None or error is not None:
                continue
            final = os.path.join(directory, t.file)
            what = f"writing tensor {t.name!r} (gathered)"
            pending.append((writer.submit(_write_joined, _ready_event(full), files[t.file], final,
                                          _chunks(what, full, t.offset, t.nbytes,
                                                  opts.request_bytes), opts), t.nbytes))
            held += t.nbytes
            while held > GATHER_BUDGET and pending:
                error = _reap(pending.popleft()[0]) or error
                held = sum(n for _, n in pending)
        while pending:
            error = _reap(pending.popleft()[0]) or error
        if own is not None:
            error = _reap(own) or error
    tl.note("bytes written")
    # Rotated too: the first fsync of a file writes back every rank's pages of
    # it, while the others' fsyncs of it wait; in turn, the files flush at once.
    for fname, f in _rotated(list(files.items()), rank):
        try:
            if error is None:
                io.fsync(f.fileno())
                tl.note("flushed", fname)
        except OSError as exc:
            error = _describe(_failure(exc, os.path.join(directory, fname), "flushing (fsync)"))
        finally:
            f.close()
    return error


def _reap(fut: Any) -> str | None:
    try:
        fut.result()
    except Exception as exc:  # noqa: BLE001 - reported to every rank
        return _describe(exc)
    return None
