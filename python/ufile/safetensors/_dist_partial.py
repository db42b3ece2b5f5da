# SPDX-License-Identifier: Apache-2.0
"""Copies of a checkpoint that hold only some of its files (a node-local copy
partly staged): each host reads the files it holds, and the bytes of a file
it lacks come from a host that holds that file, and only those cross hosts.

- The headers come from a copy that holds every file (the first, in rank
  order; there must be one): its first rank reads them and samples its files,
  and sends both to every rank. A rank's headers then name its own copy's
  path for the files it holds.
- Each copy's first rank samples the files its copy holds
  (_dist_hosts.file_identity) and the ranks compare them, file by file, with
  the full copy's: a copy that differs makes every rank raise, naming the file
  and both hosts.
- The files are loaded in groups, one after the other on every rank: the
  files that the same copies lack form a group, loaded as a collective load
  of its own where the ranks lacking them read nothing (_dist._executor)."""
from __future__ import annotations

import os
from typing import Any, Callable

from . import _dist_hosts, _dist_setup
from ._format import Header


def partial(setups: list) -> bool:
    """Whether some rank's copy holds only some of the files."""
    return any(s.get("missing") for s in setups)


def headers_of(g: Any, setups: list, headers_fn: Callable[[], list], world: bool,
               source: str | None) -> tuple:
    """(headers, identities, error) for this rank: ``shared_headers`` below
    where a copy lacks some files, else _dist_setup's."""
    if partial(setups):
        return shared_headers(g, setups, headers_fn, world, source)
    return _dist_setup.shared_headers(g, setups, headers_fn, world)


def load_groups(headers: list, setups: list) -> list:
    """[(headers, lacking per rank)], loaded in turn: ``file_groups`` where a
    copy lacks some files, else every file at once."""
    if partial(setups):
        return file_groups(headers, setups)
    return [(headers, [bool(s.get("lacks")) for s in setups])]


def lacks_file(setup: dict, header: Header) -> bool:
    """Whether this set-up's copy lacks ``header``'s file."""
    return bool(setup.get("lacks")) or os.path.basename(header.path) in setup.get("missing", [])


def shared_headers(g: Any, setups: list, headers_fn: Callable[[], list], world: bool,
                   source: str | None) -> tuple:
    """(headers, identities, error) for this rank when some copy lacks some
    files: read by the first rank of a copy that holds every file, sent to
    every rank, rebased onto this rank's copy; the copies' files sampled and
    compared (a difference is the error, on every rank)."""
    if not world:
        return None, None, ("a copy of the checkpoint holds only some of its files "
                            f"({_lacking(setups)}): that needs the default group "
                            "(torch.distributed.group.WORLD), where each host loads the "
                            "files it holds")
    full = next((r for r, s in enumerate(setups)
                 if not s.get("lacks") and not s.get("missing")), None)
    if full is None:
        return None, None, (f"no copy of the checkpoint holds every file ({_lacking(setups)}): "
                            "one host must hold each file that another lacks, and one of "
                            "them all (its headers are the load's)")
    payload = [_dist_setup.pack(_dist_setup.read_local(headers_fn)) if g.rank == full
               else None]
    g.dist.broadcast_object_list(payload, src=g.global_rank(full), group=g.group)
    headers, idents, error = _dist_setup.unpack(payload[0])
    if error:
        return None, None, (error if g.rank == full else
                            f"the headers, read by rank {full}, failed")
    mine = setups[g.rank]
    if not mine.get("lacks") and source is not None:
        base = source if os.path.isdir(source) else os.path.dirname(source)
        headers = [h if lacks_file(mine, h) else
                   Header(os.path.join(base, os.path.basename(h.path)), h.data_start,
                          h.file_size, h.metadata, h.tensors)
                   for h in headers]
    return headers, idents, _compare_copies(g, setups, headers, idents, full)


def _compare_copies(g: Any, setups: list, headers: list, reference: list,
                    full: int) -> str | None:
    """The first rank of each copy but the full one (whose samples are the
    ``reference``) samples the files its copy holds; the first that differs
    from the reference, naming both hosts, or None."""
    keys = [s.get("copy") for s in setups]
    first = keys.index(keys[g.rank]) == g.rank
    own = None
    if first and keys[g.rank] != keys[full] and not setups[g.rank].get("lacks"):
        try:
            own = _dist_hosts.identities([h for h in headers
                                          if not lacks_file(setups[g.rank], h)])
        except Exception as exc:  # noqa: BLE001 - reported to every rank
            own = f"sampling its files: {type(exc).__name__}: {exc}"
    found = [None] * g.size
    g.dist.all_gather_object(found, own, group=g.group)
    ref = {f[0]: f for f in reference}   # every file: the full copy holds them all
    for r, files in enumerate(found):
        if isinstance(files, str):
            return f"rank {r} ({setups[r]['host']!r}): {files}"
        for mine in files or []:
            if tuple(mine) != tuple(ref[mine[0]]):
                return _dist_setup.file_difference(
                    ref[mine[0]], mine, f"host {setups[full]['host']!r} (rank {full}) and "
                    f"host {setups[r]['host']!r} (rank {r})")
    return None


def file_groups(headers: list, setups: list) -> list:
    """[(headers, lacking)]: the files that the same ranks lack, in the order
    of their first file; ``lacking`` per rank."""
    groups: dict = {}
    for h in headers:
        key = tuple(lacks_file(s, h) for s in setups)
        groups.setdefault(key, []).append(h)
    return [(hs, list(key)) for key, hs in groups.items()]


def _lacking(setups: list) -> str:
    seen: dict = {}
    for s in setups:
        if s.get("missing") and s.get("copy") not in seen:
            seen[s.get("copy")] = f"host {s['host']!r} lacks {', '.join(s['missing'])}"
    return "; ".join(seen.values())
