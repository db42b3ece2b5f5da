# SPDX-License-Identifier: Apache-2.0
"""The collective load: every rank of a torch.distributed group calls it with the
same checkpoint and receives the tensors (or parts) it declared; each byte is
read from the files once, by one rank, into the tensor where it stays wherever
it can, and the group completes the tensors in place.

Sequence, the same collectives in the same order on every rank:
1. each rank reads the headers, applies ``shard`` and ``select`` and checks its
   options, and the ranks exchange what they found (one all_gather_object): a
   local error, or ranks disagreeing on the checkpoint, the shard rules or the
   options, makes every rank raise before any read;
2. every rank computes the same plan (_dist_plan), allocates its staging, and
   the ranks agree that this worked;
3. the executor (_dist_exec) reads and issues the plan's broadcasts and
   all-to-alls without waiting for other ranks; asynchronous status
   all-reduces and one final agreement make a failure on any rank raise
   DistributedLoadError on every rank, naming each failing rank's file, tensor
   and error."""
from __future__ import annotations

import contextlib
import hashlib
import os
from typing import Any, Iterator

from ._dist_exec import Executor
from ._dist_plan import make_plan
from ._dist_rules import ShardRule, Select, selected, split_dims
from ._format import Header, SafetensorError

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
        backend = str(dist.get_backend(group))
        if device == "cpu" and backend == "nccl":
            raise ValueError("ufile.safetensors: device='cpu' needs a group whose backend "
                             "moves CPU tensors (gloo); this group's is nccl")

    def global_rank(self, rank: int) -> int:
        return self.ranks[rank]

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


def split_staging(total: int, depth: int, ranks: int) -> tuple[int, int]:
    """(broadcast chunk, all-to-all slab) within ``total`` bytes: a quarter for
    the chunk (the scratch a rank receives into when it needs none of a chunk),
    the rest, but 1/32 for the small allocations of the exchange and status,
    for ``depth`` staging slots, each a slab of rows and a packed run of up to
    ``ranks`` slabs (_dist_inner)."""
    chunk = total // 4
    return chunk, (total - chunk - total // 32) // (depth * (ranks + 1))


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
                "wanted": to_bitmap(names, wanted), "device": device.split(":")[0],
                "staging": sizes}, (headers, dims, sizes, split)
    except Exception as exc:  # noqa: BLE001 - reported to every rank, then raised
        return {"error": f"{type(exc).__name__}: {exc}"}, None


def to_bitmap(names: list, wanted: set) -> bytes | None:
    """The selection as one bit a tensor in the agreed order (None: all): the
    exchange grows with the tensors, not with the names' length."""
    if len(wanted) == len(names):
        return None
    bits = bytearray((len(names) + 7) // 8)
    for i, n in enumerate(names):
        if n in wanted:
            bits[i >> 3] |= 1 << (i & 7)
    return bytes(bits)


def from_bitmap(names: list, bits: bytes | None) -> set:
    if bits is None:
        return set(names)
    return {n for i, n in enumerate(names) if bits[i >> 3] >> (i & 7) & 1}


def _check_agreement(g: _Group, states: list, local: Any) -> None:
    """Raises the same error on every rank when any rank failed or the ranks
    disagree on the checkpoint, the shard rules or the options. Split
    dimensions travel as a digest; where digests differ, every rank sends its
    list (a second exchange, on every rank alike) to name the tensor."""
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
                          ("staging", "staging (max_device_bytes, staging_buffers)")):
            if s[key] != first[key]:
                raise DistributedLoadError(f"ranks disagree on the {what}: rank 0 has "
                                           f"{first[key]!r}, rank {r} has {s[key]!r}")
    if any(s["dims"] != first["dims"] for s in states):
        splits = g.objects(local[3])
        names = checkpoint_order(local[0])
        for r, split in enumerate(splits[1:], 1):
            i = next((i for i, (a, b) in enumerate(zip(splits[0], split)) if a != b), None)
            if i is not None:
                raise DistributedLoadError(
                    f"ranks disagree on the shard rules: tensor {names[i]!r} is split along "
                    f"{splits[0][i]} on rank 0 and {split[i]} on rank {r} (None: whole)")


def collective(headers_fn: Any, fw: Any, device: str, group: Any, shard: ShardRule,
               select: Select, opts: Any) -> Iterator[tuple[str, Any]]:
    """The collective load as an iterator of (name, tensor); ``headers_fn``
    reads and checks the checkpoint's headers on this rank."""
    import torch
    opts = opts.resolved()
    g = _Group(group, device)
    ctx = torch.cuda.device(device) if device != "cpu" else contextlib.nullcontext()
    with ctx:
        state, local = _local_state(headers_fn, fw, shard, select, device, opts)
        states = g.objects(state)
        _check_agreement(g, states, local)
        headers, dims, (total, depth), _ = local
        chunk, slab = split_staging(total, depth, g.size)
        names = checkpoint_order(headers)
        plan = make_plan(headers, dims, [from_bitmap(names, s["wanted"]) for s in states],
                         chunk, slab)
        ex = Executor(plan, headers, g, fw, device, opts, depth)
        try:
            yield from ex.run()
        except DistributedLoadError:
            raise
        except Exception as exc:  # a collective itself failed (a rank exited, a timeout)
            raise DistributedLoadError(
                f"collective load failed on rank {g.rank}: {type(exc).__name__}: {exc} "
                f"(another rank may have exited or timed out)", {g.rank: str(exc)}) from exc
        finally:
            ex.close()
