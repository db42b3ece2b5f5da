# SPDX-License-Identifier: Apache-2.0
"""The collective load: every rank of a torch.distributed group calls it with the
same checkpoint and receives the tensors (or parts) it declared; each byte is
read from the files once, by one rank, into the tensor where it stays wherever
it can, and the group completes the tensors in place.

Sequence, the same collectives in the same order on every rank:
1. the ranks exchange their options, hosts and copies of the checkpoint, one
   rank of each copy reads the headers and samples the files, and the ranks
   exchange what each selects and splits and the files' identities
   (_dist_setup): a local error, or ranks disagreeing on the checkpoint's
   bytes, the shard rules or the options, makes every rank raise before any
   read;
2. every rank computes the same plan (_dist_plan), for its host's ranks when
   the group spans several hosts, allocates its staging, and the ranks agree
   that this worked;
3. the executor (_dist_exec) reads and issues the plan's broadcasts and
   all-to-alls without waiting for other ranks; asynchronous status
   all-reduces and one final agreement make a failure on any rank raise
   DistributedLoadError on every rank, naming each failing rank's file, tensor
   and error."""
from __future__ import annotations

import contextlib
import hashlib
import os
import zlib
from typing import Any, Iterator

from . import _dist_hosts, _dist_partial, _dist_setup
from ._dist_exec import Executor
from ._dist_files import Files
from ._dist_plan import make_plan, wants_from_dims
from ._dist_rules import ShardRule, Select, selected, split_dims
from ._dist_staging import split_staging
from ._format import Header, SafetensorError
from ._timeline import Timeline

DEFAULT_MAX_DEVICE_BYTES = 1 << 30     # extra device memory per rank
DEFAULT_STAGING_BUFFERS = 4            # all-to-all staging slots in flight


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
        self.ranks = list(range(self.size)) if group in (None, dist.group.WORLD) else \
            [dist.get_global_rank(group, r) for r in range(self.size)]

    def in_issue_order(self) -> bool:
        """Whether the group's collectives complete in the order issued: NCCL
        runs them one after another on one stream; gloo runs several at once
        (CPU or CUDA tensors), each finishing on its own."""
        return "nccl" in str(self.dist.get_backend(self.group)).lower()

    def backend_error(self) -> str | None:
        """Why this group cannot move ``device``'s tensors, or None."""
        backend = str(self.dist.get_backend(self.group))
        if self.device == "cpu" and backend == "nccl":
            return ("device='cpu' needs a group whose backend moves CPU tensors (gloo); "
                    "this group's is nccl")
        return None

    def global_rank(self, rank: int) -> int:
        return self.ranks[rank]

    def objects(self, obj: Any) -> list:
        out: list = [None] * self.size
        self.dist.all_gather_object(out, obj, group=self.group)
        return out

    def agree(self, error: str | None) -> None:
        """Raises DistributedLoadError on every rank if any rank has an error."""
        self.agree_later(error)()

    def agree_later(self, error: str | None) -> Any:
        """Starts ``agree`` without waiting: returns the callable that waits
        for the outcome and raises as ``agree`` does. Every rank calls it
        before its next collective on the group."""
        flag = self.torch.tensor([0 if error else 1], dtype=self.torch.int32,
                                 device=self.device)
        work = self.dist.all_reduce(flag, op=self.dist.ReduceOp.MIN, group=self.group,
                                    async_op=True)

        def outcome() -> None:
            work.wait()
            if int(flag.item()) != 1:
                raise_failures(self.objects(error))
        return outcome


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


def staging_sizes(opts: Any) -> tuple[int, int]:
    """(max_device_bytes, staging_buffers) with their defaults. Raises
    ValueError for values that are not valid."""
    total = DEFAULT_MAX_DEVICE_BYTES if opts.max_device_bytes is None else opts.max_device_bytes
    depth = DEFAULT_STAGING_BUFFERS if opts.staging_buffers is None else opts.staging_buffers
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 2:
        raise ValueError(f"staging_buffers must be an int of at least 2, not {depth!r}")
    if isinstance(total, bool) or not isinstance(total, int) or total < 64 << 10:
        raise ValueError(f"max_device_bytes must be an int of at least 65536, not {total!r}")
    return total, depth


def _local_state(headers_fn: Any, fw: Any, shard: ShardRule, select: Select, device: str,
                 opts: Any) -> tuple[dict, Any]:
    """What this rank found, as plain data for the exchange, and its headers."""
    try:
        if fw.name != "pt":
            raise ValueError("a collective load (group=...) returns torch tensors: "
                             "framework must be 'pt'")
        if opts.register_buffers:
            raise ValueError("register_buffers is not supported with group=")
        sizes = staging_sizes(opts)
        headers = headers_fn()
        dims = split_dims(headers, shard)
        wanted = selected(headers, select)
        names = checkpoint_order(headers)
        split = [dims[n] for n in names]
        return {"error": None, "fingerprint": _fingerprint(headers), "names": len(names),
                "bytes": sum(h.file_size for h in headers),
                "dims": hashlib.sha256(repr(split).encode()).hexdigest(),
                "wanted": to_bitmap(names, wanted)}, (headers, dims, sizes, split)
    except _Reported as exc:
        return {"error": str(exc)}, None
    except Exception as exc:  # noqa: BLE001 - reported to every rank, then raised
        return {"error": f"{type(exc).__name__}: {exc}"}, None


def to_bitmap(names: list, wanted: set) -> bytes | None:
    """The selection as one bit a tensor in the agreed order (None: all),
    compressed: the exchange grows with the tensors, not with the names'
    length, and a regular selection (an expert of each layer) takes a few
    hundred bytes."""
    if len(wanted) == len(names):
        return None
    bits = bytearray((len(names) + 7) // 8)
    for i, n in enumerate(names):
        if n in wanted:
            bits[i >> 3] |= 1 << (i & 7)
    return zlib.compress(bytes(bits), 9)


def from_bitmap(names: list, packed: bytes | None) -> set:
    if packed is None:
        return set(names)
    bits = zlib.decompress(packed)
    return {n for i, n in enumerate(names) if bits[i >> 3] >> (i & 7) & 1}


def _check_agreement(g: _Group, states: list, local: Any, hosts: list,
                     identities: list | None) -> None:
    """Raises the same error on every rank when any rank failed or the ranks
    disagree on the checkpoint's bytes or headers, or on the shard rules.
    Identities and split dimensions travel as digests; where digests differ,
    every rank sends its list (a second exchange, on every rank alike) to name
    the file (and both hosts) or the tensor."""
    if any(s["error"] for s in states):
        raise_failures([s["error"] for s in states])
    first = states[0]
    if any(s["identity"] != first["identity"] for s in states):
        error = _dist_setup.identity_error(g.objects(identities), hosts)
        if error:
            raise DistributedLoadError(error)
    for r, s in enumerate(states[1:], 1):
        if s["fingerprint"] != first["fingerprint"]:
            raise DistributedLoadError(
                f"ranks disagree on the checkpoint: rank 0 sees {first['names']} tensors in "
                f"{first['bytes']} bytes (header digest {first['fingerprint'][:12]}), rank {r} "
                f"sees {s['names']} in {s['bytes']} (digest {s['fingerprint'][:12]})")
    if any(s["dims"] != first["dims"] for s in states):
        splits = g.objects(local[3])
        names = checkpoint_order(local[0])
        for r, split in enumerate(splits[1:], 1):
            i = next((i for i, (a, b) in enumerate(zip(splits[0], split)) if a != b), None)
            if i is not None:
                raise DistributedLoadError(
                    f"ranks disagree on the shard rules: tensor {names[i]!r} is split along "
                    f"{splits[0][i]} on rank 0 and {split[i]} on rank {r} (None: whole)")


def collective(headers_fn: Any, framework: str, device: Any, group: Any, shard: ShardRule,
               select: Select, options: dict, source: Any = None, stream: bool = False,
               order: list | None = None) -> Iterator[tuple[str, Any]]:
    """The collective load as an iterator of (name, tensor), from the
    caller's arguments (converting them is part of the agreed set-up);
    ``headers_fn`` reads and checks the checkpoint's headers (called by one
    rank of each copy of it, ``source`` its path on this host); ``stream``:
    iter_checkpoint's memory bound; ``order``, when given, receives the
    tensors' order."""
    import torch
    timeline = Timeline("UFILE_DIST_TRACE")   # the executor's too: one from the call
    setup_error, fw, dev, opts = _convert(framework, device, options)
    g = _Group(group, dev or "cpu")   # a process outside the group cannot take part
    setup, opts = _dist_setup.setup_state(g, fw, dev, opts, setup_error,
                                          _dist_setup.source_path(source), stream,
                                          staging_sizes)
    setups = g.objects(setup)
    _dist_setup.check_setup(setups)
    timeline.note("options agreed")
    device = dev
    ctx = torch.cuda.device(device) if device != "cpu" else contextlib.nullcontext()
    with ctx:
        hosts = [s["host"] for s in setups]
        world = _dist_hosts.is_world(g.dist, group)
        headers, idents, error = _dist_partial.headers_of(g, setups, headers_fn, world,
                                                          _dist_setup.source_path(source))
        timeline.note("headers")
        files = Files(opts.direct)   # opened while the load is agreed and planned
        if not error:
            files.start([h.path for h in headers if not _dist_partial.lacks_file(setups[g.rank], h)])
        try:
            def received() -> list:
                if error:
                    raise _Reported(error)
                return headers
            state, local = _local_state(received, fw, shard, select, device, opts)
            state["identity"] = _dist_setup.identity_digest(idents)
            states = g.objects(state)
            _check_agreement(g, states, local, hosts, idents)
            timeline.note("checkpoint agreed")
            headers, dims, (total, depth), _ = local
            names = checkpoint_order(headers)
            if order is not None:
                order.extend(names)
            wanted = [from_bitmap(names, s["wanted"]) for s in states]
            # One load a group of files that the same ranks lack, in turn.
            for group_headers, lacking in _dist_partial.load_groups(headers, setups):
                held = {n for h in group_headers for n in h.tensors}
                ex = _executor(g, hosts, world, group_headers, dims,
                               [w & held for w in wanted], fw, device, opts, total, depth,
                               stream, lacking=lacking, timeline=timeline, files=files)
                timeline.note("planned")
                yield from run_executor(ex, g.rank)
        finally:
            files.close()
            timeline.write(g.rank)   # once, however many executors noted in it


def run_executor(ex: Executor, rank: int) -> Iterator[tuple[str, Any]]:
    """The executor's items, then the executor closed; a collective that
    fails under it (a rank exited, a timeout) raised as DistributedLoadError."""
    try:
        yield from ex.run()
    except DistributedLoadError:
        raise
    except Exception as exc:
        raise DistributedLoadError(
            f"collective load failed on rank {rank}: {type(exc).__name__}: {exc} "
            f"(another rank may have exited or timed out)", {rank: str(exc)}) from exc
    finally:
        ex.close()


def _convert(framework: str, device: Any, options: dict) -> tuple:
    """(error or None, framework, device, options) from the caller's arguments."""
    from . import _frameworks, _loader
    try:
        return (None, _frameworks.get(framework), _frameworks.normalize_device(device),
                _loader.Options(**options))
    except Exception as exc:  # noqa: BLE001 - agreed in the set-up, raised on every rank
        return f"{type(exc).__name__}: {exc}", None, None, None


class _Reported(Exception):
    """An error already worded (the copy's reading rank's), passed on as is."""

    def __str__(self) -> str:
        return str(self.args[0])


def _executor(g: _Group, hosts: list, world: bool, headers: list, dims: dict, wanted: list,
              fw: Any, device: str, opts: Any, total: int, depth: int, stream: bool,
              wants: list | None = None, lacking: list | None = None,
              timeline: Timeline | None = None, files: Files | None = None) -> Executor:
    """The executor of this rank's plan: over its host's sub-group when the
    group is the default one and spans several hosts (each host reads each
    byte once; failures still agreed over the whole group), else over the
    group. A host whose ranks all lack the checkpoint (``lacking``, per rank)
    joins the sub-group of the host that reads for it; only ranks that hold
    the files read. ``stream``: half of ``total`` bounds the outputs held,
    half is staging. ``wants`` (load_into): every rank's parts, instead of
    ``dims`` and ``wanted``."""
    budget = total // 2 if stream else None
    staging = total - budget if stream else total
    lacking = lacking or [False] * g.size
    units = _dist_hosts.reading_units(hosts, lacking) if world else [list(range(g.size))]
    if len(units) > 1:
        groups = _dist_hosts.subgroups(g.dist, units)
        i = next(i for i, u in enumerate(units) if g.rank in u)
        mine = units[i]
        if wants is None:
            wants = wants_from_dims(headers, dims, wanted)   # parts of the whole group
        plan = _plan(headers, dims, [], staging, depth, [wants[r] for r in mine],
                     [lacking[r] for r in mine])
        return Executor(plan, headers, _Group(groups[i], device), fw, device, opts, depth,
                        agree=g, budget=budget, timeline=timeline, files=files)
    plan = _plan(headers, dims, wanted, staging, depth, wants, lacking)
    return Executor(plan, headers, g, fw, device, opts, depth, budget=budget,
                    timeline=timeline, files=files)


def _plan(headers: list, dims: dict, wanted: list, staging: int, depth: int,
          wants: list | None, lacking: list) -> Any:
    """The plan over ranks of which ``lacking`` ones read nothing: their
    bytes come from ranks that read them into a ring of ``depth`` staging
    chunks, carved out of the broadcast chunk's share of ``staging``."""
    ranks = len(lacking)
    chunk, slab = split_staging(staging, depth, ranks)
    readers = None
    if any(lacking) and not all(lacking):
        readers = [r for r in range(ranks) if not lacking[r]]
        chunk //= 1 + depth
    return make_plan(headers, dims, wanted, chunk, slab, wants=wants, readers=readers)
