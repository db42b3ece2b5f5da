# SPDX-License-Identifier: Apache-2.0
"""The changes `python -m ufile.dropin` makes to a library folder, planned in
full before any is made, and undone in reverse order if one fails.

enable: each NVIDIA libcufile name in the folder is moved, unchanged, into
<folder>/.ufile-dropin/ (ldconfig does not look into subfolders) and replaced
by a symbolic link to ufile's drop-in; <folder>/.ufile-dropin/manifest.json
records each moved name with its sha256, size, mode and link target.
disable: checks every backup against the manifest, removes the links and
moves the originals back (same inode: byte-identical, same mode and times)."""
from __future__ import annotations

import hashlib
import json
import os
import stat

from . import _elf

BACKUP_DIR = ".ufile-dropin"
MANIFEST = "manifest.json"
_FORMAT = 1


class Refusal(Exception):
    """A command that changed nothing (partial: it changed something and could
    not undo it all): the reason, and what to do."""

    def __init__(self, message: str, partial: bool = False):
        super().__init__(message)
        self.partial = partial


def lib_names(folder: str) -> list[str]:
    """The libcufile names in folder: libcufile.so*, libcufile-<hash>.so*."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names
                  if n.startswith("libcufile.so") or
                  (n.startswith("libcufile-") and ".so" in n))


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(folder: str) -> dict | None:
    path = os.path.join(folder, BACKUP_DIR, MANIFEST)
    try:
        with open(path) as f:
            m = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise Refusal(f"{path} is unreadable ({exc}): restore it, or move the files in "
                      f"{os.path.dirname(path)} back by hand") from exc
    if m.get("format") != _FORMAT or not isinstance(m.get("entries"), dict):
        raise Refusal(f"{path} is not a manifest this version of ufile wrote")
    return m


def _writable(folder: str) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refusal(f"no permission to change {folder} (needs write access: run as its owner, "
                      "or with sudo in a container build)")
    backup = os.path.join(folder, BACKUP_DIR)
    if os.path.isdir(backup) and not os.access(backup, os.W_OK | os.X_OK):
        raise Refusal(f"no permission to change {backup}")


def _record(path: str) -> dict:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return {"type": "symlink", "target": os.readlink(path)}
    return {"type": "file", "sha256": sha256(path), "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode)}


def plan_enable(folder: str, dropin: str) -> list[tuple[str, dict]]:
    """(name, record) for each name to back up and link; raises Refusal for a
    name it does not recognise or one changed since an earlier enable."""
    manifest = read_manifest(folder) or {"entries": {}}
    names = lib_names(folder)
    todo = []
    for name in names:
        path = os.path.join(folder, name)
        ident = _elf.identify(path)
        if name in manifest["entries"]:
            if os.path.islink(path) and ident.kind == _elf.UFILE:
                continue
            raise Refusal(f"{path} changed since ufile was enabled here (now: "
                          f"{ident.describe()}); its original is in {BACKUP_DIR}/. Run "
                          "`disable` first, or delete that entry's backup if it is obsolete")
        if ident.kind == _elf.UFILE:
            continue
        if ident.kind == _elf.UNKNOWN:
            raise Refusal(f"{path}: {ident.describe()}; leaving every file as it is")
        if os.path.lexists(os.path.join(folder, BACKUP_DIR, name)):
            raise Refusal(f"{folder}/{BACKUP_DIR}/{name} exists but {MANIFEST} does not "
                          "record it: move it away first (it may be an earlier original)")
        real = os.path.realpath(path)
        if (os.path.islink(path) and os.path.dirname(real) == os.path.realpath(folder)
                and os.path.basename(real) in names and not os.path.islink(real)):
            continue  # a link to a file of this folder that is replaced itself
        todo.append((name, _record(path)))
    if todo:
        _writable(folder)
    return todo


def _write_manifest(folder: str, manifest: dict) -> None:
    path = os.path.join(folder, BACKUP_DIR, MANIFEST)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


class _Undo:
    """Steps done so far, undone in reverse order when a later one fails."""

    def __init__(self):
        self.steps = []

    def do(self, action, undo) -> None:
        action()
        self.steps.append(undo)

    def rollback(self) -> list[str]:
        errors = []
        for undo in reversed(self.steps):
            try:
                undo()
            except OSError as exc:
                errors.append(str(exc))
        return errors


def _fail(undo: _Undo, exc: OSError) -> Refusal:
    left = undo.rollback()
    tail = ("; undone, nothing changed" if not left else
            "; undoing it failed too (" + "; ".join(left) + "): check the folder by hand")
    return Refusal(f"{exc}{tail}", partial=bool(left))


def apply_enable(plans: dict[str, list], dropin: str) -> list[str]:
    """Carries out every folder's plan; all or nothing. Returns what changed."""
    undo, done = _Undo(), []
    try:
        for folder, todo in plans.items():
            backup = os.path.join(folder, BACKUP_DIR)
            old = read_manifest(folder)
            manifest = old or {"format": _FORMAT, "entries": {}}
            if not os.path.isdir(backup):
                undo.do(lambda b=backup: os.mkdir(b, 0o755), lambda b=backup: os.rmdir(b))
            for name, record in todo:
                path, saved = os.path.join(folder, name), os.path.join(backup, name)
                undo.do(lambda p=path, s=saved: os.rename(p, s),
                        lambda p=path, s=saved: os.rename(s, p))
                undo.do(lambda p=path: os.symlink(dropin, p), lambda p=path: os.unlink(p))
                manifest["entries"][name] = dict(record, linked_to=dropin)
                done.append(f"{path}: was {_describe(record)}, now a link to {dropin} "
                            f"(original kept in {BACKUP_DIR}/)")
            undo.do(lambda f=folder, m=manifest: _write_manifest(f, m),
                    lambda f=folder, o=old: _restore_manifest(f, o))
    except OSError as exc:
        raise _fail(undo, exc) from exc
    return done


def _restore_manifest(folder: str, old: dict | None) -> None:
    if old is None:
        os.unlink(os.path.join(folder, BACKUP_DIR, MANIFEST))
    else:
        _write_manifest(folder, old)


def _describe(record: dict) -> str:
    if record["type"] == "symlink":
        return f"a link to {record['target']}"
    return f"NVIDIA's libcufile ({record['size']} bytes, sha256 {record['sha256'][:16]}...)"


def plan_disable(folder: str) -> list[tuple[str, dict]]:
    """(name, record) for each name to restore, each backup checked against
    the manifest; raises Refusal when one does not match."""
    manifest = read_manifest(folder)
    if manifest is None:
        return []
    todo = []
    for name, record in sorted(manifest["entries"].items()):
        path = os.path.join(folder, name)
        saved = os.path.join(folder, BACKUP_DIR, name)
        if os.path.lexists(path) and not (os.path.islink(path) and
                                          _elf.identify(path).kind == _elf.UFILE):
            raise Refusal(f"{path} changed since ufile was enabled here (now: "
                          f"{_elf.identify(path).describe()}); the original stays in "
                          f"{os.path.dirname(saved)}: put back what you want by hand")
        if not os.path.lexists(saved) or _record(saved) != _strip(record):
            raise Refusal(f"the backup {saved} is missing or differs from what "
                          f"{MANIFEST} recorded: nothing restored")
        todo.append((name, record))
    _writable(folder)
    return todo


def _strip(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "linked_to"}


def apply_disable(plans: dict[str, list]) -> list[str]:
    """Restores every folder's originals; all or nothing. Returns what changed."""
    undo, done = _Undo(), []
    try:
        for folder, todo in plans.items():
            backup = os.path.join(folder, BACKUP_DIR)
            manifest = read_manifest(folder)
            for name, record in todo:
                path, saved = os.path.join(folder, name), os.path.join(backup, name)
                if os.path.lexists(path):
                    target = os.readlink(path)
                    undo.do(lambda p=path: os.unlink(p),
                            lambda p=path, t=target: os.symlink(t, p))
                undo.do(lambda p=path, s=saved: os.rename(s, p),
                        lambda p=path, s=saved: os.rename(p, s))
                done.append(f"{path}: restored {_describe(record)}")
            mpath = os.path.join(backup, MANIFEST)
            undo.do(lambda m=mpath: os.unlink(m),
                    lambda f=folder, o=manifest: _write_manifest(f, o))
            if not os.listdir(backup):
                undo.do(lambda b=backup: os.rmdir(b), lambda b=backup: os.mkdir(b, 0o755))
    except OSError as exc:
        raise _fail(undo, exc) from exc
    return done
