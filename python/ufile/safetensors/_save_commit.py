# SPDX-License-Identifier: Apache-2.0
"""Puts the files of a new checkpoint in place of the previous one so that, at
every instant (a kill included), a loader finds one complete checkpoint: the
previous one or the new one, never a mix and never a partial file.

Loaders look in a directory in one of two orders: the index
(``model.safetensors.index.json``) first, then ``model.safetensors`` (ufile,
huggingface_hub), or ``model.safetensors`` first (transformers). The index is
the commit point: every file it names is complete before it names it. The new
files arrive complete and flushed under temporary names (_save_write); then:

1. if the previous checkpoint has no index (one ``model.safetensors`` while
   the new one is sharded, or shards whose index is gone), an index naming its
   files is written first (so the new files, renamed in next, are not mixed
   into a directory scan); with no loadable previous checkpoint, files under
   the new names are removed and the new index goes first;
2. a file of the previous checkpoint that a new file will replace (same name)
   is hard-linked to a backup name (``.NAME.ufile-old-RANDOM``, which no loader
   scans), and the previous index is rewritten to name the backups: the
   previous checkpoint stays whole, under other names;
3. the new files are renamed into place; the new index (or, for a single new
   file that replaces a sharded checkpoint, an index naming it) is renamed over
   the index last;
4. files of the previous checkpoint that the new one does not use, its
   backups, and leftovers of interrupted saves (temporary and backup names not
   named by the index) are removed; with a single new file, then its index.

Each step is one rename (or link, or unlink), and the directory is flushed
(fsync) after each, so the order survives a power loss. A failure raises
OSError naming the step; the directory then holds the previous checkpoint
(possibly through backups its index names) or the new one, and the next save
removes what is left. One save at a time per directory: an flock on the
directory refuses a second."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
from typing import Iterator

from . import _save_io
from ._format import INDEX, SafetensorError, open_file
from ._save_write import TEMP_MARK, _failure, sync_dir, temp_name

SINGLE = "model.safetensors"
BACKUP_MARK = ".ufile-old-"


def lock(directory: str) -> int:
    """An exclusive flock on the directory for one save (the descriptor, for
    ``unlock``); BlockingIOError when another save into it holds one."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise BlockingIOError(11, "another save into this directory is in progress "
                              "(wait() an asynchronous one before the next)", directory) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def unlock(fd: int) -> None:
    os.close(fd)


@contextlib.contextmanager
def locked(directory: str) -> Iterator[None]:
    fd = lock(directory)
    try:
        yield
    finally:
        unlock(fd)


def read_index(directory: str) -> dict | None:
    """The index document, or None where there is none (or it is not a valid
    index: then the previous checkpoint was not loadable through it anyway)."""
    try:
        with os.fdopen(open_file(os.path.join(directory, INDEX)), encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError, OSError, SafetensorError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("weight_map"), dict) or \
            not all(isinstance(v, str) for v in doc["weight_map"].values()):
        return None
    return doc


def index_bytes(doc: dict) -> bytes:
    """An index as transformers and huggingface_hub write it (indent 2,
    sorted keys, a final newline)."""
    return (json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _write_index(directory: str, doc: dict, done: list | None = None) -> None:
    """The index, replaced atomically; ``done`` gets True once it is renamed
    into place (a later failure to flush the directory does not undo it)."""
    io = _save_io.IO
    final = os.path.join(directory, INDEX)
    tmp = temp_name(final)
    try:
        io.write_small(tmp, index_bytes(doc))
    except OSError as exc:
        _quiet_unlink(tmp)
        raise _failure(exc, final, "writing the index") from exc
    try:
        io.rename(tmp, final)
    except OSError as exc:
        _quiet_unlink(tmp)
        raise _failure(exc, final, "renaming the index into place") from exc
    if done is not None:
        done.append(True)
    sync_dir(directory, final)


def _quiet_unlink(path: str) -> None:
    try:
        _save_io.IO.unlink(path)
    except OSError:
        pass


def is_leftover(name: str) -> bool:
    """A temporary or backup name of a checkpoint file (not of other files a
    user keeps in the directory, which may be being saved meanwhile)."""
    return name.startswith((f".{SINGLE}", ".model-", f".{INDEX}")) and (
        BACKUP_MARK in name or TEMP_MARK in name)


_SHARD_NAME = re.compile(r"model-\d{5,}-of-\d{5,}\.safetensors")


def _single_index(directory: str, name: str) -> dict | None:
    return _files_index(directory, [name])


def _scanned_index(directory: str) -> dict | None:
    """A previous checkpoint without an index: ``model.safetensors``, else the
    shards named as checkpoints name them, as an index (None when there is
    none, or one is not a valid file: then nothing loadable is kept)."""
    names = os.listdir(directory)
    if SINGLE in names:
        return _files_index(directory, [SINGLE])
    shards = sorted(n for n in names if _SHARD_NAME.fullmatch(n))
    return _files_index(directory, shards) if shards else None


def _files_index(directory: str, files: list[str]) -> dict | None:
    """An index naming ``files`` (None when one is not a valid safetensors
    file, or two hold one tensor)."""
    from ._format import SafetensorError, read_header
    wmap: dict = {}
    total = 0
    for name in files:
        try:
            h = read_header(os.path.join(directory, name))
        except (SafetensorError, OSError):
            return None
        for t in h.tensors.values():
            if t.name in wmap:
                return None
            wmap[t.name] = name
            total += t.nbytes
    return {"metadata": {"total_size": total}, "weight_map": wmap}


def commit(directory: str, new: dict[str, str], new_index: dict | None) -> None:
    """Replaces the checkpoint in ``directory`` by ``new`` ({final name: the
    flushed temporary file holding it}) and ``new_index`` (None for a
    checkpoint of one file, ``model.safetensors``). See the module's steps.
    Before the commit point a failure undoes what this call put in place."""
    io = _save_io.IO
    old = read_index(directory)
    placed: list[str] = []
    done: list[bool] = []  # set once the committing rename happened
    pending = False
    try:
        if old is None:  # step 1
            old = _scanned_index(directory)
            if old is not None and new_index is None and \
                    set(old["weight_map"].values()) <= {SINGLE}:
                old = None  # one file over one file: a rename replaces it
            if old is not None:
                _write_index(directory, old)
        if old is not None:
            old = _backup_collisions(directory, old, new)  # step 2
        elif new_index is not None:
            # No loadable previous checkpoint: files under the new names belong
            # to none, and go; the new index goes first, naming files not yet in
            # place, so a loader fails loudly (missing shard) instead of taking
            # the shards renamed so far for a checkpoint.
            for name in new:
                if os.path.lexists(os.path.join(directory, name)):
                    try:
                        io.unlink(os.path.join(directory, name))
                    except OSError as exc:
                        raise _failure(exc, os.path.join(directory, name),
                                       "removing a file of no loadable checkpoint") from exc
            staged: list[bool] = []
            try:
                _write_index(directory, new_index, staged)
            finally:
                pending = bool(staged)
        for name, tmp in sorted(new.items()):  # step 3
            final = os.path.join(directory, name)
            try:
                io.rename(tmp, final)
            except OSError as exc:
                raise _failure(exc, final, "renaming the written file into place") from exc
            placed.append(name)
        if new_index is None and old is None:
            done.append(True)  # one file over one file: the rename was the commit
        sync_dir(directory, os.path.join(directory, INDEX))
        if pending:
            done.append(True)
        elif new_index is not None:
            _write_index(directory, new_index, done)
        elif old is not None:  # a single file replaces an indexed checkpoint
            _write_index(directory, _single_index(directory, SINGLE) or {"weight_map": {}},
                         done)
    except BaseException:
        if not done:
            _undo(directory, new, placed, pending)
        raise
    _clean(directory, old, new, new_index)  # step 4


def _undo(directory: str, new: dict[str, str], placed: list[str], pending: bool) -> None:
    """Before the commit point: removes what this commit put in place (no
    loader's index names it) and the temporary files not yet renamed."""
    for name, tmp in new.items():
        _quiet_unlink(os.path.join(directory, name) if name in placed else tmp)
    if pending:
        _quiet_unlink(os.path.join(directory, INDEX))


def _backup_collisions(directory: str, old: dict, new: dict[str, str]) -> dict:
    """Step 2: the previous index, rewritten to name backups of the files the
    new checkpoint replaces (the same document when none is replaced)."""
    io = _save_io.IO
    wmap = old["weight_map"]
    replaced = sorted({f for f in wmap.values()
                       if f in new and os.path.exists(os.path.join(directory, f))})
    if not replaced:
        return old
    backups = {}
    for name in replaced:
        backup = f".{name}{BACKUP_MARK}{secrets.token_hex(4)}"
        try:
            io.link(os.path.join(directory, name), os.path.join(directory, backup))
        except OSError as exc:
            for b in backups.values():
                _quiet_unlink(os.path.join(directory, b))
            raise _failure(exc, os.path.join(directory, name),
                           f"linking the previous file to {backup}") from exc
        backups[name] = backup
    sync_dir(directory, os.path.join(directory, INDEX))
    doc = dict(old)
    doc["weight_map"] = {t: backups.get(f, f) for t, f in wmap.items()}
    renamed: list[bool] = []
    try:
        _write_index(directory, doc, renamed)
    except BaseException:
        if not renamed:  # else the index in place names the backups: they stay
            for b in backups.values():
                _quiet_unlink(os.path.join(directory, b))
        raise
    return doc


def _clean(directory: str, old: dict | None, new: dict[str, str],
           new_index: dict | None) -> None:
    """Step 4: what the new checkpoint does not use."""
    io = _save_io.IO
    keep = set(new)
    if new_index is not None:
        keep |= set(new_index["weight_map"].values())
    doomed = set()
    if old is not None:
        doomed |= {f for f in old["weight_map"].values() if f not in keep}
    if new_index is not None and SINGLE not in keep:
        doomed.add(SINGLE)
    for name in os.listdir(directory):
        if is_leftover(name) and name not in keep:
            doomed.add(name)
    for name in sorted(doomed):
        path = os.path.join(directory, name)
        if os.path.lexists(path) and os.path.dirname(os.path.normpath(path)) == \
                os.path.normpath(directory):
            try:
                io.unlink(path)
            except OSError as exc:
                raise _failure(exc, path, "removing a file of the previous checkpoint") \
                    from exc
    if new_index is None and os.path.exists(os.path.join(directory, INDEX)):
        sync_dir(directory, os.path.join(directory, SINGLE))
        try:
            io.unlink(os.path.join(directory, INDEX))
        except OSError as exc:
            raise _failure(exc, os.path.join(directory, INDEX), "removing the index") \
                from exc
    sync_dir(directory, os.path.join(directory, INDEX if new_index else SINGLE))
