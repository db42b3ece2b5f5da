# SPDX-License-Identifier: Apache-2.0
"""What a collective load settles before it reads anything, each step an
exchange that every rank makes, so that an error on one rank raises on all:

1. the set-up (one all_gather_object of a few fields): each rank's options as
   resolved (environment variables included: UFILE_LOAD_INFLIGHT and
   UFILE_LOAD_REQUEST_BYTES set the defaults), its device type, framework and
   mode (load or iterate), its host and its copy of the checkpoint; a rank's
   error there (a bad option, a group that cannot move the device's tensors)
   or ranks that disagree raise DistributedLoadError on every rank;
2. the headers: one rank of each copy reads them and, when the ranks see
   several copies, samples the files (_dist_hosts.file_identity), and sends
   both to the copy's other ranks (copies lacking some files: _dist_partial);
3. (in _dist) the exchange of what each rank selects and splits, with the
   files' identities: copies that differ raise on every rank, naming both
   hosts and the file."""
from __future__ import annotations

import hashlib
import os
import pickle
import zlib
from typing import Any, Callable

from . import _dist_hosts
from ._format import Header, TensorInfo

# Options every rank must pass alike, as named in the error.
_AGREED = (("framework", "framework"), ("device", "device type"),
           ("mode", "call (load_checkpoint or iter_checkpoint)"),
           ("staging", "staging (max_device_bytes, staging_buffers)"),
           ("direct", "direct option"), ("request_bytes", "request_bytes"),
           ("inflight", "inflight"), ("host_named", f"use of {_dist_hosts.HOST_ENV}"))


def setup_state(g: Any, fw: Any, device: str | None, raw_opts: Any, error: str | None,
                source: str | None, stream: bool, sizes_of: Callable) -> tuple[dict, Any]:
    """(this rank's set-up state, its resolved options or None); ``error``:
    the caller's arguments could not be converted."""
    if error:
        return {"error": error}, None
    try:
        opts = raw_opts.resolved()
        error = g.backend_error()
        if error:
            raise ValueError(error)
        if fw.name != "pt":
            raise ValueError("a collective load (group=...) returns torch tensors: "
                             "framework must be 'pt'")
        if opts.register_buffers:
            raise ValueError("register_buffers is not supported with group=")
        host, named = _dist_hosts.host_id()
        return {"error": None, "host": host, "host_named": named,
                "copy": _dist_hosts.copy_key(host, source) if source else None,
                "lacks": _dist_hosts.lacks(source),
                "missing": _dist_hosts.missing_files(source),
                "framework": fw.name, "device": device.split(":")[0],
                "mode": "iter_checkpoint" if stream else "load_checkpoint", "staging": sizes_of(opts),
                "direct": opts.direct, "request_bytes": opts.request_bytes,
                "inflight": opts.inflight}, opts
    except Exception as exc:  # noqa: BLE001 - reported to every rank, then raised
        return {"error": f"{type(exc).__name__}: {exc}"}, None


def check_setup(states: list) -> None:
    """Raises DistributedLoadError (the same on every rank) for any rank's
    error or the first option on which a rank differs from rank 0."""
    from ._dist import DistributedLoadError, raise_failures
    if any(s["error"] for s in states):
        raise_failures([s["error"] for s in states])
    first = states[0]
    for key, what in _AGREED:
        for r, s in enumerate(states[1:], 1):
            if s[key] != first[key]:
                raise DistributedLoadError(f"ranks disagree on the {what}: rank 0 has "
                                           f"{first[key]!r}, rank {r} has {s[key]!r}")


def read_local(headers_fn: Callable[[], list], sample: bool = True) -> tuple:
    """(headers, identities, error): what a copy's reading rank sends; the
    identities (the files sampled) only when ``sample``, else None."""
    try:
        headers = headers_fn()
        return headers, _dist_hosts.identities(headers) if sample else None, None
    except Exception as exc:  # noqa: BLE001 - reported to every rank
        return None, None, f"{type(exc).__name__}: {exc}"


def shared_headers(g: Any, states: list, headers_fn: Callable[[], list], world: bool
                   ) -> tuple:
    """(headers, identities, error) for this rank: read by the first rank of
    its copy that holds the files and broadcast over the copy's sub-group
    (with the copies that lack the checkpoint it reads for, _dist_hosts), or
    read here when the rank is alone in its copy. When the load's group is
    not the default group (sub-groups cannot be made then) each rank reads
    them itself, but ranks that lack the checkpoint receive them from the
    first that holds it, over the group."""
    keys = [s["copy"] for s in states]
    lacking = [bool(s.get("lacks")) for s in states]
    # One copy for every rank: nothing to compare its files with, none sampled.
    sample = None in keys or len(set(keys)) > 1
    if not world or None in keys:
        if not any(lacking) or all(lacking):
            return read_local(headers_fn, sample)
        return _sent(g, lacking.index(False), g.group, headers_fn, sample)
    shared = [u for u in _dist_hosts.reading_units(keys, lacking) if len(u) > 1]
    groups = _dist_hosts.subgroups(g.dist, shared)   # on every process, in the same order
    mine = next((u for u in shared if g.rank in u), None)
    if mine is None:
        return read_local(headers_fn, sample)
    reader = next((r for r in mine if not lacking[r]), mine[0])
    return _sent(g, reader, groups[shared.index(mine)], headers_fn, sample)


def _sent(g: Any, reader: int, group: Any, headers_fn: Callable[[], list],
          sample: bool) -> tuple:
    """What ``reader`` (a rank of g) read, broadcast over ``group``."""
    payload = [pack(read_local(headers_fn, sample)) if g.rank == reader else None]
    g.dist.broadcast_object_list(payload, src=g.global_rank(reader), group=group)
    headers, idents, error = unpack(payload[0])
    if error and g.rank != reader:   # named once, on the rank that read them
        error = f"its copy's headers, read by rank {reader}, failed"
    return headers, idents, error


def pack(found: tuple) -> bytes:
    """What a copy's reading rank sends, as plain tuples (pickling 90,000
    TensorInfo objects takes 3 times as long), compressed (names repeat:
    0.65 MB for 90,000 tensors)."""
    headers, idents, error = found
    flat = None if headers is None else [
        (h.path, h.data_start, h.file_size, h.metadata,
         [(t.name, t.dtype, t.shape, t.begin, t.end) for t in h.tensors.values()])
        for h in headers]
    return zlib.compress(pickle.dumps((flat, idents, error)), 1)


def unpack(data: bytes) -> tuple:
    flat, idents, error = pickle.loads(zlib.decompress(data))
    headers = None if flat is None else [
        Header(path, start, size, meta, {t[0]: TensorInfo(*t) for t in tensors})
        for path, start, size, meta, tensors in flat]
    return headers, idents, error


def identity_digest(identities: list | None) -> str | None:
    return None if identities is None else \
        hashlib.sha256(repr(identities).encode()).hexdigest()


def identity_error(idents: list, hosts: list) -> str | None:
    """The first difference between rank 0's files and another rank's, naming
    both hosts and the file; None when all agree."""
    first = idents[0]
    for r, mine in enumerate(idents[1:], 1):
        if mine == first:
            continue
        where = f"host {hosts[0]!r} (rank 0) and host {hosts[r]!r} (rank {r})"
        if [f[0] for f in mine] != [f[0] for f in first]:
            return (f"ranks disagree on the checkpoint's files between {where}: "
                    f"{[f[0] for f in first]} and {[f[0] for f in mine]}")
        a, b = next((a, b) for a, b in zip(first, mine) if a != b)
        return file_difference(a, b, where)
    return None


def file_difference(a: tuple, b: tuple, where: str) -> str:
    """The error for one file's two identities (name, size, sampled digest)."""
    return (f"ranks disagree on the checkpoint: {a[0]} differs between {where}: "
            f"{a[1]} bytes, sampled digest {a[2][:12]} and {b[1]} bytes, "
            f"sampled digest {b[2][:12]}")


def source_path(source: Any) -> str | None:
    return None if source is None else os.fspath(source)
