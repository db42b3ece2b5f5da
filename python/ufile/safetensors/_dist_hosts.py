# SPDX-License-Identifier: Apache-2.0
"""Hosts of a collective load: which rank runs on which host, which ranks see
the same copy of the checkpoint, and the identity of the bytes each copy holds.

- A rank's host is ``UFILE_HOST_ID`` when set (tests run several "hosts" on
  one machine), else ``socket.gethostname()``; whether the variable is set must
  agree across ranks (a mix would merge or split hosts silently).
- A *copy* is the ranks of one host that pass the same path (a node-local copy
  under a per-host path, or a shared filesystem seen from that host): one of
  them (its first rank) reads the headers and, when the ranks see more than
  one copy, samples the files; the others receive what it found over the
  copy's own sub-group.
- A copy *lacks* the checkpoint when its path does not exist on its host (a
  node-local copy not staged there): a copy that holds it reads for it (the
  lacking copies go round robin to the holding ones, in first-rank order),
  its headers and its bytes. A copy that lacks only some files (those its
  index names, ``missing_files``) gets those from a copy that holds them
  (_dist_partial).
- A file's identity is its size and a SHA-256 over its header and
  ``SAMPLE_BLOCKS`` blocks of its data spread evenly over it: copies that
  differ there (another revision of the same architecture) are found before
  any read; bytes that differ only outside the samples are not.
Sub-groups are made with ``torch.distributed.new_group``, which every process
of the default group must call in the same order: only a load over the whole
default group makes them, and they are kept for later loads over the same
hosts. A set of every rank is the default group itself (one host, one copy:
no new group)."""
from __future__ import annotations

import hashlib
import os
import socket
from typing import Any

from ._format import INDEX, SafetensorError, read_weight_map

HOST_ENV = "UFILE_HOST_ID"
SAMPLE_BLOCKS = 16
BLOCK = 4096

_groups: dict = {}      # (default group, ranks) -> process group, made once


def host_id() -> tuple[str, bool]:
    """(this process's host, whether UFILE_HOST_ID named it)."""
    named = os.environ.get(HOST_ENV)
    return (named, True) if named else (socket.gethostname(), False)


def file_identity(path: str, data_start: int, file_size: int) -> tuple[int, str]:
    """(size, SHA-256 hex of the header and the sampled data blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(data_start))
        span = file_size - data_start
        step = max(BLOCK, span // SAMPLE_BLOCKS)
        for off in range(data_start, file_size, step):
            f.seek(off)
            h.update(f.read(BLOCK))
        if span > BLOCK:
            f.seek(file_size - BLOCK)   # the end: a truncated or extended tail
            h.update(f.read(BLOCK))
    return file_size, h.hexdigest()


def identities(headers: list) -> list:
    """(file name, size, sampled digest) for each file."""
    return [(os.path.basename(h.path),) + file_identity(h.path, h.data_start, h.file_size)
            for h in headers]


def copy_key(host: str, path: str) -> tuple:
    return host, os.path.realpath(path)


def members(keys: list) -> dict:
    """key -> the ranks with that key, in rank order (keys in first-rank order)."""
    out: dict = {}
    for r, k in enumerate(keys):
        out.setdefault(k, []).append(r)
    return out


def lacks(source: str | None) -> bool:
    """Whether this rank's copy of the checkpoint is missing on its host."""
    return source is not None and not os.path.exists(source)


def missing_files(source: str | None) -> list:
    """Names of the files the index of the copy at ``source`` names but its
    directory lacks (sorted); [] when the path does not exist, names no
    index, or holds every file (an index that cannot be read is reported by
    the headers' reading)."""
    if source is None:
        return []
    index = os.path.join(source, INDEX) if os.path.isdir(source) else source
    if not index.endswith(".json") or not os.path.isfile(index):
        return []
    try:
        shards = set(read_weight_map(index).values())
    except (OSError, SafetensorError):
        return []
    base = os.path.dirname(index)
    return sorted(s for s in shards if not os.path.isfile(os.path.join(base, s)))


def reading_units(keys: list, lacking: list) -> list:
    """Rank lists in first-rank order: each unit of ranks sharing a key that
    holds the files (a rank of it does not lack them), with the units that
    lack them (every rank lacks) it reads for, round robin. One unit of all
    ranks when none holds (the load fails on reading the headers)."""
    units = members(keys)
    short = [k for k, rs in units.items() if all(lacking[r] for r in rs)]
    holders = [k for k in units if k not in short]
    if not holders:
        return [sorted(range(len(keys)))]
    out = {k: list(units[k]) for k in holders}
    for i, k in enumerate(short):
        out[holders[i % len(holders)]] += units[k]
    return [sorted(rs) for rs in out.values()]


def subgroups(dist: Any, rank_sets: list) -> list:
    """A process group for each set of default-group ranks, made on every
    process in the same order, once a process: a later load over the same
    hosts reuses them."""
    world = dist.group.WORLD   # a new default group (after a re-init) makes new ones
    for stale in [k for k in _groups if k[0] is not world]:
        del _groups[stale]
    everyone = list(range(dist.get_world_size()))
    out = []
    for ranks in rank_sets:
        if list(ranks) == everyone:   # no second communicator (NCCL: set up on first use)
            out.append(world)
            continue
        key = (world, tuple(ranks))
        if key not in _groups:
            _groups[key] = dist.new_group(list(ranks))
        out.append(_groups[key])
    return out


def is_world(dist: Any, group: Any) -> bool:
    """Whether ``group`` spans the whole default group, in its rank order."""
    if group is None or group is dist.group.WORLD:
        return True
    n = dist.get_world_size()
    return dist.get_world_size(group) == n and \
        all(dist.get_global_rank(group, r) == r for r in range(n))
