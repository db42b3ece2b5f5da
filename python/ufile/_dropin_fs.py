# SPDX-License-Identifier: Apache-2.0
"""The changes `python -m ufile.dropin` makes to a library folder.

enable: each NVIDIA libcufile name gets a second hard link in
<folder>/.ufile-dropin/ (link(2) never replaces a name, so a backup is never
overwritten; ldconfig does not look into subfolders), then a symbolic link to
ufile's drop-in, made beside the name under a temporary one, is renamed over
it: the name exists at every instant and names the original or the link.
disable: a hard link to the backup is renamed over the link, then the backup's
name is removed (same inode: byte-identical, same mode and times).

<folder>/.ufile-dropin/manifest.json records each replaced name (sha256,
size, mode or link target, the drop-in linked to) and, from before the first
step of a change until after its last, the change itself ("pending"). A
change killed at any instant is therefore found: `status` reports it, and the
next `enable` or `disable` puts its originals back before doing its own work.
One command at a time changes a folder: each holds flock(2) on the folder."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import time

from . import _elf

BACKUP_DIR = ".ufile-dropin"
MANIFEST = "manifest.json"
_FORMAT = 2
_READABLE_FORMATS = (1, 2)  # 1: written before "pending" existed
LOCK_WAIT_S = 120.0


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


def in_scope(folder: str) -> bool:
    """A folder with a libcufile name, or with ufile's backups of one."""
    return bool(lib_names(folder)) or os.path.isdir(os.path.join(folder, BACKUP_DIR))


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
    if m.get("format") not in _READABLE_FORMATS or not isinstance(m.get("entries"), dict):
        raise Refusal(f"{path} is not a manifest this version of ufile wrote")
    m["format"] = _FORMAT
    return m


def write_manifest(folder: str, manifest: dict) -> None:
    """Flushed, then renamed into place; removed (with an empty backup folder)
    when it records nothing."""
    backup = os.path.join(folder, BACKUP_DIR)
    path = os.path.join(backup, MANIFEST)
    if not manifest["entries"] and not manifest.get("pending"):
        for p in (path + ".tmp", path):  # .tmp: left by a command killed while writing
            if os.path.lexists(p):
                os.unlink(p)
        if os.path.isdir(backup) and not os.listdir(backup):
            os.rmdir(backup)
        return
    os.makedirs(backup, 0o755, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)
    _fsync_dir(backup)


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Locked:
    """flock(2) on each folder, taken in one order (no deadlock between two
    commands), waited for up to LOCK_WAIT_S; released on exit or death."""

    def __init__(self, folders: list[str]):
        self.folders = sorted(set(os.path.realpath(f) for f in folders))
        self.fds: list[int] = []

    def __enter__(self) -> "Locked":
        try:
            for folder in self.folders:
                self.fds.append(_lock(folder))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _lock(folder: str) -> int:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise Refusal(f"cannot open {folder} to lock it: {exc.strerror}") from exc
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise Refusal(f"another `python -m ufile.dropin` has been changing {folder} "
                              f"for {LOCK_WAIT_S:g} s; try again when it has finished") from None
            time.sleep(0.05)
        except OSError as exc:
            os.close(fd)
            raise Refusal(f"cannot lock {folder} (flock: {exc.strerror})") from exc


def busy(folder: str) -> bool:
    """Whether a command holds folder's lock now (its change is under way)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def writable(folder: str) -> None:
    """Raises Refusal, with the reason, when folder cannot be changed."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        raise Refusal(f"cannot change {folder}: its file system is mounted read-only; enable "
                      "ufile where the environment is built (an image's build step)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise Refusal(f"no permission to change {folder} (needs write access: run as its owner, "
                      "or with sudo in a container build)")
    backup = os.path.join(folder, BACKUP_DIR)
    if os.path.isdir(backup) and not os.access(backup, os.W_OK | os.X_OK):
        raise Refusal(f"no permission to change {backup}")


def record(path: str) -> dict:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return {"type": "symlink", "target": os.readlink(path)}
    return {"type": "file", "sha256": sha256(path), "size": st.st_size,
            "mode": stat.S_IMODE(st.st_mode)}


def strip(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k != "linked_to"}


def describe(rec: dict) -> str:
    if rec["type"] == "symlink":
        return f"a link to {rec['target']}"
    return f"NVIDIA's libcufile ({rec['size']} bytes, sha256 {rec['sha256'][:16]}...)"


def is_ours(path: str, rec: dict) -> bool:
    """path is the link enable made (its target may be gone) or ufile's."""
    if not os.path.islink(path):
        return False
    return os.readlink(path) == rec.get("linked_to") or _elf.identify(path).kind == _elf.UFILE


def same_file(a: str, b: str) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def tmp_name(folder: str, name: str) -> str:
    """The name a new entry is made under before it is renamed over name
    (a dot name: neither ldconfig nor lib_names sees it)."""
    return os.path.join(folder, f".{name}.ufile-new")


def put(folder: str, name: str, make) -> None:
    """make(tmp) creates the new entry; rename(2) then puts it over name."""
    tmp = tmp_name(folder, name)
    if os.path.lexists(tmp):
        os.unlink(tmp)  # left by a killed command: only ever ours
    make(tmp)
    os.replace(tmp, os.path.join(folder, name))
    _fsync_dir(folder)  # durable before the manifest says it is done


def restore(folder: str, name: str) -> bool:
    """Puts the backup of name back over name and removes the backup's name;
    False when there is no backup."""
    path, saved = os.path.join(folder, name), os.path.join(folder, BACKUP_DIR, name)
    if not os.path.lexists(saved):
        return False
    if not same_file(path, saved):
        put(folder, name, lambda tmp: os.link(saved, tmp, follow_symlinks=False))
    os.unlink(saved)
    return True


def retire(folder: str, name: str) -> str:
    """Takes the backup of name out of the way when name is NVIDIA's file again
    (a reinstalled wheel): removed when it is that same file, else kept under a
    name of its own. Returns what happened."""
    path, saved = os.path.join(folder, name), os.path.join(folder, BACKUP_DIR, name)
    if not os.path.lexists(saved):
        return "no older original was kept"
    old = record(saved)
    if old == record(path):
        os.unlink(saved)
        return "the saved original, the same bytes, was removed"
    keep = f"{saved}.superseded-{old.get('sha256', 'link')[:16]}"
    if not os.path.lexists(keep):
        os.link(saved, keep, follow_symlinks=False)
    os.unlink(saved)
    return f"the older original differs from it and is kept as {keep}"


def recover(folder: str) -> list[str]:
    """Finishes an interrupted change the only safe way: the originals of its
    names go back in place. Returns what it did."""
    manifest = read_manifest(folder)
    pending = (manifest or {}).get("pending")
    if not pending:
        _clear_debris(folder, manifest)
        return []
    out = []
    for name in sorted(pending["names"]):
        tmp = tmp_name(folder, name)
        if os.path.lexists(tmp):
            os.unlink(tmp)
        if restore(folder, name):
            out.append(f"{os.path.join(folder, name)}: put back NVIDIA's original "
                       f"(an interrupted `{pending['op']}` had replaced it)")
        manifest["entries"].pop(name, None)
    manifest.pop("pending")
    write_manifest(folder, manifest)
    return out or [f"{folder}: an interrupted `{pending['op']}` had changed nothing; cleared"]


def _clear_debris(folder: str, manifest: dict | None) -> None:
    """What a command killed while writing its first manifest leaves."""
    backup = os.path.join(folder, BACKUP_DIR)
    if manifest is None and os.path.lexists(os.path.join(backup, MANIFEST + ".tmp")):
        os.unlink(os.path.join(backup, MANIFEST + ".tmp"))
    if manifest is None and os.path.isdir(backup) and not os.listdir(backup):
        os.rmdir(backup)


def plan_enable(folder: str, dropin: str) -> list[tuple[str, str, dict]]:
    """(name, action, record) for each name to change: "replace" (back up and
    link), "relink" (ufile's link, to another drop-in or to one now gone) or
    "supersede" (NVIDIA's file again since an enable: its older original is
    taken out of the way first). Raises Refusal for a name it does not
    recognise."""
    manifest = read_manifest(folder) or {"entries": {}}
    names = lib_names(folder)
    todo = []
    for name in names:
        path = os.path.join(folder, name)
        saved = os.path.join(folder, BACKUP_DIR, name)
        rec = manifest["entries"].get(name)
        if rec is not None and is_ours(path, rec):
            if os.readlink(path) != dropin:
                todo.append((name, "relink", rec))
            continue
        ident = _elf.identify(path)
        if rec is not None and ident.kind != _elf.NVIDIA:
            raise Refusal(_changed(path, ident.describe(), saved))
        if rec is None and ident.kind == _elf.UFILE:
            continue
        if ident.kind == _elf.UNKNOWN:
            raise Refusal(f"{path}: {ident.describe()}; leaving every file as it is")
        if rec is None and os.path.lexists(saved):
            raise Refusal(f"{saved} exists but {MANIFEST} does not record it: move it away "
                          "first (it may be an earlier original)")
        real = os.path.realpath(path)
        if (os.path.islink(path) and os.path.dirname(real) == os.path.realpath(folder)
                and os.path.basename(real) in names and not os.path.islink(real)):
            continue  # a link to a file of this folder that is replaced itself
        todo.append((name, "replace" if rec is None else "supersede", record(path)))
    if todo:
        writable(folder)
    return todo


def _changed(path: str, now: str, saved: str) -> str:
    return (f"{path} is now {now}: neither the link ufile made nor NVIDIA's library. "
            f"NVIDIA's original is kept in {saved}: move {path} away, then `disable` "
            "puts the original back")


def plan_disable(folder: str) -> list[tuple[str, str, dict]]:
    """(name, action, record) for each recorded name: "restore" (its backup,
    checked against the manifest, goes back) or "forget" (it is NVIDIA's file
    again: the record and the older original are taken away). Raises Refusal
    when a backup is missing or differs, or the name holds something else."""
    manifest = read_manifest(folder)
    if manifest is None:
        return []
    todo = []
    for name, rec in sorted(manifest["entries"].items()):
        path = os.path.join(folder, name)
        saved = os.path.join(folder, BACKUP_DIR, name)
        if os.path.lexists(path) and not is_ours(path, rec):
            ident = _elf.identify(path)
            if ident.kind != _elf.NVIDIA:
                raise Refusal(_changed(path, ident.describe(), saved))
            todo.append((name, "forget", rec))
            continue
        if not os.path.lexists(saved):
            raise Refusal(f"{saved}, the original of {path}, is missing: reinstall the package "
                          f"that owns {path} (it puts NVIDIA's file back), then run `disable` "
                          "again to clear ufile's record")
        if record(saved) != strip(rec):
            raise Refusal(f"the backup {saved} differs from what {MANIFEST} recorded: "
                          "nothing restored")
        todo.append((name, "restore", rec))
    writable(folder)
    return todo


def _begin(folder: str, op: str, todo: list) -> dict:
    manifest = read_manifest(folder) or {"format": _FORMAT, "entries": {}}
    manifest["pending"] = {"op": op, "names": [name for name, _, _ in todo]}
    write_manifest(folder, manifest)
    return manifest


def _enable_one(folder: str, name: str, action: str, rec: dict, dropin: str) -> str:
    path, saved = os.path.join(folder, name), os.path.join(folder, BACKUP_DIR, name)
    note = ""
    if action == "supersede":
        note = f"; NVIDIA's file was back since an earlier enable: {retire(folder, name)}"
    if action != "relink":
        os.link(path, saved, follow_symlinks=False)  # EEXIST: never replaces a backup
    put(folder, name, lambda tmp: os.symlink(dropin, tmp))
    was = f"ufile's link to {rec['linked_to']}" if action == "relink" else describe(rec)
    return f"{path}: was {was}, now a link to {dropin} (original kept in {BACKUP_DIR}/){note}"


def apply_enable(plans: dict[str, list], dropin: str) -> list[str]:
    """Carries out every folder's plan; all or nothing (an error or an
    interrupt undoes the steps made). Returns what changed."""
    done, started = [], []
    try:
        for folder, todo in plans.items():
            started.append((folder, todo, read_manifest(folder)))
            manifest = _begin(folder, "enable", todo)
            for name, action, rec in todo:
                done.append(_enable_one(folder, name, action, rec, dropin))
                manifest["entries"][name] = dict(strip(rec), linked_to=dropin)
            manifest.pop("pending")
            write_manifest(folder, manifest)
    except BaseException as exc:
        left = _undo_enable(started)
        if not isinstance(exc, OSError):
            raise
        tail = ("; undone, nothing changed" if not left else
                "; undoing it failed too (" + "; ".join(left) + "): `disable` finishes it")
        raise Refusal(f"{exc}{tail}", partial=bool(left)) from exc
    return done


def _undo_enable(started: list) -> list[str]:
    errors = []
    for folder, todo, old in reversed(started):
        try:
            for name, action, rec in todo:
                if action == "relink":
                    put(folder, name, lambda tmp, t=rec["linked_to"]: os.symlink(t, tmp))
                else:
                    restore(folder, name)
            old = old or {"format": _FORMAT, "entries": {}}
            for name, action, _ in todo:
                if action == "supersede":
                    old["entries"].pop(name, None)
            old.pop("pending", None)
            write_manifest(folder, old)
        except OSError as exc:
            errors.append(str(exc))
    return errors


def apply_disable(plans: dict[str, list]) -> list[str]:
    """Restores every folder's originals. A failure part-way leaves the change
    recorded as pending, which the next `disable` finishes."""
    done = []
    try:
        for folder, todo in plans.items():
            manifest = _begin(folder, "disable", todo)
            for name, action, rec in todo:
                path = os.path.join(folder, name)
                if action == "restore":
                    restore(folder, name)
                    done.append(f"{path}: restored {describe(rec)}")
                else:
                    done.append(f"{path}: NVIDIA's libcufile again (reinstalled since "
                                f"enable), left as it is; {retire(folder, name)}")
                manifest["entries"].pop(name)
            manifest.pop("pending")
            write_manifest(folder, manifest)
    except OSError as exc:
        raise Refusal(f"{exc}; run `disable` again to put back the rest", partial=True) from exc
    return done
