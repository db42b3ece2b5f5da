# SPDX-License-Identifier: Apache-2.0
"""Puts ufile under every cuFile client of an environment, and takes it out.

  python -m ufile.dropin status  [--json] [SCOPE]
  python -m ufile.dropin enable  [SCOPE] [--dropin PATH]
  python -m ufile.dropin disable [SCOPE]

SCOPE is this Python environment's site-packages by default (NVIDIA's wheels:
nvidia/*/lib/libcufile.so.0, which torch loads by its full path), or one or
more of --prefix DIR (a CUDA toolkit or any library folder) and --system (the
dynamic linker's folders). `enable` replaces each NVIDIA libcufile name there
with a link to ufile's drop-in libcufile.so.0, keeping the original;
`disable` puts the originals back byte for byte (docs/PACKAGING.md). Exit
status: 0 done (or nothing to do), 1 refused (nothing changed), 2 usage."""
from __future__ import annotations

import argparse
import glob
import json
import os
import site
import subprocess
import sys
import sysconfig

from . import _dropin_fs as fs
from . import _elf

DROPIN_NAME = "libcufile.so.0"
_PROBE = r"""
import json, os, sys
try:
    __import__(sys.argv[1])
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"})); sys.exit(0)
seen = []
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].strip()
            if os.path.basename(path).startswith("libcufile") and path not in seen:
                seen.append(path)
print(json.dumps({"mapped": seen}))
"""


def site_dirs() -> list[str]:
    """This interpreter's site-packages folders."""
    out = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        out.append(site.getusersitepackages())
    out += [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    return _unique(p for p in out if os.path.isdir(p))


def env_folders(sites: list[str]) -> list[str]:
    """Folders of the environment that hold a libcufile: a wheel's lib/
    (nvidia/cu13/lib, nvidia/cufile/lib) or an auditwheel <pkg>.libs/."""
    out = []
    for s in sites:
        for pattern in ("nvidia/*/lib", "nvidia/*/lib64", "*/lib", "*.libs"):
            out += glob.glob(os.path.join(s, pattern))
    return _unique(d for d in sorted(out) if fs.in_scope(d))


def prefix_folders(prefix: str) -> list[str]:
    """A toolkit's or any prefix's library folders that hold a libcufile."""
    cands = [prefix] + [os.path.join(prefix, d) for d in ("lib", "lib64")]
    cands += sorted(glob.glob(os.path.join(prefix, "targets", "*", "lib")))
    return _unique(d for d in cands if fs.in_scope(d))


def _ld_conf_dirs(path: str, depth: int = 0) -> list[str]:
    out = []
    try:
        with open(path) as f:
            lines = [ln.split("#", 1)[0].strip() for ln in f]
    except OSError:
        return out
    for ln in filter(None, lines):
        if ln.startswith("include") and depth < 4:
            pattern = ln.split(None, 1)[1]
            if not os.path.isabs(pattern):
                pattern = os.path.join(os.path.dirname(path), pattern)
            for inc in sorted(glob.glob(pattern)):
                out += _ld_conf_dirs(inc, depth + 1)
        else:
            out.append(ln)
    return out


def system_folders() -> list[str]:
    """The dynamic linker's folders (ld.so.conf, the defaults, the ldconfig
    cache's libcufile entries) that hold a libcufile."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    cands = _ld_conf_dirs("/etc/ld.so.conf")
    for base in ("/lib", "/usr/lib", "/lib64", "/usr/lib64"):
        cands += [os.path.join(base, multiarch), base] if multiarch else [base]
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
        cands += [os.path.dirname(ln.split("=>")[-1].strip()) for ln in out.splitlines()
                  if "libcufile" in ln and "=>" in ln]
    except (OSError, subprocess.SubprocessError):
        pass
    return _unique(d for d in cands if fs.in_scope(d))


def other_folders() -> list[str]:
    """Shown by status only: LD_LIBRARY_PATH and the CUDA toolkits."""
    cands = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for root in sorted(glob.glob("/usr/local/cuda*")):
        cands += prefix_folders(root)
    return _unique(d for d in cands if fs.in_scope(d))


def _unique(items) -> list[str]:
    seen, out = set(), []
    for i in items:
        key = os.path.realpath(i)
        if key not in seen:
            seen.add(key)
            out.append(os.path.abspath(i))
    return out


def find_dropin(explicit: str | None) -> str:
    """ufile's drop-in libcufile.so.0: --dropin, $UFILE_DROPIN, the copy bundled
    in the package, or the one `cmake --install` recorded. Raises Refusal."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [explicit] if explicit else []
    if not explicit and os.environ.get("UFILE_DROPIN"):
        cands.append(os.environ["UFILE_DROPIN"])
    if not cands:
        cands.append(os.path.join(here, DROPIN_NAME))
        try:
            from . import _libpath  # written by `cmake --install`
            cands.append(os.path.normpath(os.path.join(here, _libpath.DROPIN)))
        except (ImportError, AttributeError):
            pass
    tried = []
    for c in cands:
        ident = _elf.identify(c)
        if ident.kind == _elf.UFILE and ident.soname == DROPIN_NAME:
            return os.path.abspath(c)
        why = ident.describe() if ident.kind != _elf.UFILE else f"ufile's, but SONAME {ident.soname}"
        tried.append(f"{c} ({'absent' if not os.path.exists(c) else why})")
    raise fs.Refusal("ufile's drop-in libcufile.so.0 not found; tried " + "; ".join(tried) +
                     ". Pass --dropin PATH (the build's src/libcufile.so.0, or "
                     "PREFIX/lib/ufile/libcufile.so.0), or pip install with UFILE_LIBRARY set")


def probe(module: str, timeout: float) -> dict:
    """Which libcufile files a fresh interpreter maps after importing module."""
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True,
                           text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"`import {module}` did not finish within {timeout:g} s"}
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
        if "error" in out:
            out["error"] = f"`import {module}` failed with {sys.executable}: {out['error']}"
        return out
    except (ValueError, IndexError):
        return {"error": f"the probe process failed (exit {r.returncode}): {r.stderr.strip()}"}


def _entry(folder: str, name: str, scope: str, manifest: dict) -> dict:
    path = os.path.join(folder, name)
    ident = _elf.identify(path)
    rec = manifest["entries"].get(name)
    e = {"path": path, "scope": scope, "kind": ident.kind, "what": ident.describe(),
         "backup": rec is not None}
    if os.path.islink(path):
        e["link"] = os.readlink(path)
    if rec is not None and not os.path.lexists(path):
        e["note"] = "missing: `disable` puts NVIDIA's original back"
    elif rec is not None and not fs.is_ours(path, rec):
        e["note"] = ("NVIDIA's file again since enable (a reinstalled wheel?): `enable` or "
                     "`disable` clears the older original" if ident.kind == _elf.NVIDIA else
                     "changed since enable: neither ufile's link nor NVIDIA's library")
    elif rec is not None and not os.path.exists(path):
        e["note"] = "ufile's link, whose drop-in is gone: `enable` relinks, `disable` restores"
    return e


def _folder_state(folder: str, scope: str, entries: list, pending: list) -> None:
    try:
        manifest = fs.read_manifest(folder) or {"entries": {}}
    except fs.Refusal as exc:
        pending.append({"folder": folder, "problem": str(exc)})
        manifest = {"entries": {}}
    names = fs.lib_names(folder)
    names += sorted(n for n in manifest["entries"] if n not in names)
    entries += [_entry(folder, n, scope, manifest) for n in names]
    if manifest.get("pending"):
        op = manifest["pending"]["op"]
        problem = (f"an `{op}` is under way (another process holds the folder's lock)"
                   if fs.busy(folder) else f"an interrupted `{op}`: the next `enable` or "
                   "`disable` puts its originals back first")
        pending.append({"folder": folder, "op": op, "names": manifest["pending"]["names"],
                        "problem": problem})


def _verdict(entries: list, mapped: dict, module: str) -> str:
    if "error" in mapped:
        files = ("none was found" if not entries else "all are ufile's"
                 if all(e["kind"] == _elf.UFILE for e in entries) else "not all are ufile's")
        return f"no process check ({mapped['error']}); of the libcufile files listed, {files}"
    kinds = [_elf.identify(p).kind for p in mapped["mapped"]]
    if not kinds:
        return f"a process that imports {module} maps no libcufile"
    if all(k == _elf.UFILE for k in kinds):
        return f"a process that imports {module} maps ufile's libcufile only"
    return (f"a process that imports {module} maps a libcufile that is not ufile's: "
            "run `python -m ufile.dropin enable` to put ufile in its place")


def status(scopes: dict, module: str, timeout: float, dropin: str | None) -> dict:
    listed, entries, pending = set(), [], []
    for scope, folders in scopes.items():
        for folder in folders:
            if os.path.realpath(folder) in listed:
                continue
            listed.add(os.path.realpath(folder))
            _folder_state(folder, scope, entries, pending)
    try:
        drop = find_dropin(dropin)
    except fs.Refusal as exc:
        drop = f"missing: {exc}"
    mapped = probe(module, timeout)
    mapped_desc = [{"path": p, "what": _elf.identify(p).describe()}
                   for p in mapped.get("mapped", [])]
    return {"dropin": drop, "files": entries, "pending": pending, "import": module,
            "mapped": mapped_desc, "probe_error": mapped.get("error"),
            "verdict": _verdict(entries, mapped, module)}


def _print_status(st: dict) -> None:
    print(f"ufile's drop-in: {st['dropin']}")
    print("libcufile files clients could load:" if st["files"] else
          "libcufile files clients could load: none found")
    for e in st["files"]:
        link = f" -> {e['link']}" if "link" in e else ""
        kept = "; original kept in .ufile-dropin/" if e["backup"] else ""
        note = f" ({e['note']})" if "note" in e else ""
        print(f"  [{e['scope']}] {e['path']}{link}: {e['what']}{kept}{note}")
    for p in st["pending"]:
        print(f"  {p['folder']}: {p['problem']}")
    if st["probe_error"]:
        print(f"after `import {st['import']}`: not checked: {st['probe_error']}")
    else:
        print(f"after `import {st['import']}` a fresh process maps:" +
              ("" if st["mapped"] else " no libcufile"))
        for m in st["mapped"]:
            print(f"  {m['path']}: {m['what']}")
    print(f"verdict: {st['verdict']}")


def _scopes(args, for_status: bool) -> dict:
    scopes = {}
    for p in args.prefix or []:
        if not os.path.isdir(p):
            raise fs.Refusal(f"--prefix {p}: no such folder")
    if args.prefix:
        scopes["prefix"] = _unique(d for p in args.prefix for d in prefix_folders(p))
    if args.system:
        scopes["system"] = system_folders()
    if args.site_packages or not scopes or for_status:
        sites = args.site_packages or site_dirs()
        scopes = {"env": env_folders(sites), **scopes}
    if for_status:
        scopes.setdefault("system", system_folders())
        scopes["other"] = other_folders()
    return scopes


def _change(args) -> int:
    scopes = _scopes(args, for_status=False)
    folders = _unique(d for ds in scopes.values() for d in ds)
    dropin = find_dropin(args.dropin) if args.command == "enable" else None
    with fs.Locked(folders):
        done = []
        for f in folders:
            try:
                lines = fs.recover(f)
            except OSError as exc:
                raise fs.Refusal(f"putting back the originals of an interrupted change in {f} "
                                 f"failed ({exc}); run the command again", partial=True) from exc
            for line in lines:
                print(line, flush=True)
        if dropin is not None:
            plans = {f: t for f in folders if (t := fs.plan_enable(f, dropin))}
            done = fs.apply_enable(plans, dropin) if plans else []
        else:
            plans = {f: t for f in folders if (t := fs.plan_disable(f))}
            done = fs.apply_disable(plans) if plans else []
    where = ", ".join(folders)
    for line in done:
        print(line)
    if not folders:
        print(f"nothing to change: no libcufile in scope ({', '.join(scopes)})")
    elif not done and args.command == "enable":
        print(f"nothing to change: every libcufile in {where} is ufile's already")
    elif not done:
        print(f"nothing to change: nothing ufile replaced in {where}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ufile.dropin",
                                description=__doc__.split("\n\n")[0].splitlines()[0])
    p.add_argument("command", choices=("status", "enable", "disable"))
    p.add_argument("--prefix", action="append", metavar="DIR",
                   help="a CUDA toolkit or library folder (repeatable)")
    p.add_argument("--system", action="store_true", help="the dynamic linker's folders")
    p.add_argument("--site-packages", action="append", metavar="DIR",
                   help="the environment's site-packages (default: this interpreter's)")
    p.add_argument("--dropin", metavar="PATH", help="ufile's drop-in libcufile.so.0")
    p.add_argument("--import", dest="module", default="torch", metavar="MODULE",
                   help="status: the module a fresh process imports (default torch)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="status: seconds that import may take (default 120)")
    p.add_argument("--json", action="store_true", help="status: one JSON document")
    args = p.parse_args(argv)
    try:
        if args.command != "status":
            return _change(args)
        st = status(_scopes(args, for_status=True), args.module, args.timeout, args.dropin)
        if args.json:
            print(json.dumps(st, indent=1))
        else:
            _print_status(st)
        return 0
    except fs.Refusal as exc:
        what = "failed part-way" if exc.partial else "refused, nothing changed"
        print(f"ufile.dropin {args.command}: {what}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
