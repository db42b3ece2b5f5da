# SPDX-License-Identifier: Apache-2.0
"""python -m ufile.dropin status/enable/disable on a made-up environment: a
site-packages laid out like NVIDIA's wheels and a CUDA toolkit, with a
stand-in NVIDIA libcufile.so.0 compiled here ($CC), and ufile's drop-in
($UFILE_DROPIN). Also ufile.library_path() beside other libcufile mappings."""
import hashlib
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

import ufile
from ufile import _dropin_fs, _elf, dropin

DROPIN = os.environ["UFILE_DROPIN"]
FAKE_SRC = r"""
const char ufile_test_marker[] = "/dev/nvidia-fs%d";
int cuFileDriverOpen(void) { return 0; }
int cuFileHandleRegister(void) { return 0; }
"""


def build_lib(out, soname="libcufile.so.0", marker=True, pad=False):
    """NVIDIA's stand-in; pad: 4 MiB larger, so that the loader maps it below
    the libraries loaded before it instead of in a gap between them."""
    src = out + ".c"
    with open(src, "w") as f:
        f.write(FAKE_SRC if marker else FAKE_SRC.replace("nvidia-fs", "other-fs"))
        if pad:
            f.write("const char ufile_test_pad[4 << 20] = {1};\n")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-shared", "-fPIC", "-o", out, src, f"-Wl,-soname,{soname}"],
                   check=True)
    os.unlink(src)
    return out


@pytest.fixture(scope="session")
def fake_nvidia(tmp_path_factory):
    return build_lib(str(tmp_path_factory.mktemp("lib") / "nvidia.so"))


@pytest.fixture
def env(fake_nvidia):
    """site/nvidia/cu13/lib/libcufile.so.0 (NVIDIA's stand-in) and a module
    `fakecuda` that loads it by its full path, as torch does. Under a folder
    every user may enter, for the test that runs as nobody."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="ufile-dropin-"))
    os.chmod(top, 0o755)
    site = top / "site"
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(fake_nvidia, lib / "libcufile.so.0")
    (site / "fakecuda.py").write_text(
        "import ctypes, os\n"
        "ctypes.CDLL(os.path.join(os.path.dirname(__file__), "
        "'nvidia/cu13/lib/libcufile.so.0'))\n")
    yield site
    for dirpath, _, _ in os.walk(top):
        os.chmod(dirpath, 0o755)
    shutil.rmtree(top)


def snapshot(root):
    """Every path under root: content hash or link target, mode, mtime, inode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = "link:" + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(open(p, "rb").read()).hexdigest()
            else:  # a folder's times change with its entries
                out[os.path.relpath(p, root)] = ("dir", st.st_mode, st.st_ino)
                continue
            out[os.path.relpath(p, root)] = (what, st.st_mode, st.st_mtime_ns, st.st_ino)
    return out


def run(site, *args, user=None, dropin=DROPIN):
    pythonpath = os.environ["PYTHONPATH"]
    if user is not None:
        pythonpath, dropin = stage_for(site.parent, user, dropin)
    cmd = [sys.executable, "-m", "ufile.dropin", *args, "--site-packages", str(site),
           "--dropin", dropin]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    envv = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), pythonpath]))
    return subprocess.run(cmd, capture_output=True, text=True, env=envv, timeout=120,
                          cwd=site.parent)


def stage_for(top, user, dropin):
    """The package and the drop-in copied under top, which every user may
    enter: the source and build trees may sit where user cannot (a home of
    mode 700). Returns (PYTHONPATH, drop-in) for user's process."""
    stage = top / "stage"
    if not stage.exists():
        shutil.copytree(os.path.dirname(ufile.__file__), stage / "ufile",
                        ignore=shutil.ignore_patterns("__pycache__", "*.so*"))
        shutil.copy(dropin, stage / "libcufile.so.0")
        for dirpath, _, files in os.walk(stage):
            os.chmod(dirpath, 0o755)
            for f in files:
                os.chmod(os.path.join(dirpath, f), 0o644)
    check = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
                            sys.executable, "-c", "import ufile.dropin"], cwd=top,
                           env=dict(os.environ, PYTHONPATH=str(stage)), capture_output=True,
                           text=True, timeout=60)
    if check.returncode != 0:
        pytest.skip(f"user {user} cannot run the staged package ({check.stderr.strip()})")
    return str(stage), str(stage / "libcufile.so.0")


def status(site):
    r = run(site, "status", "--json", "--import", "fakecuda")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_identify(tmp_path, fake_nvidia):
    assert _elf.identify(fake_nvidia).kind == _elf.NVIDIA
    ident = _elf.identify(DROPIN)
    assert (ident.kind, ident.soname) == (_elf.UFILE, "libcufile.so.0")
    assert _elf.identify(os.environ["UFILE_LIBRARY"]).kind == _elf.UFILE
    other = build_lib(str(tmp_path / "other.so"), marker=False)
    assert "neither ufile's nor NVIDIA's" in _elf.identify(other).detail
    wrong = build_lib(str(tmp_path / "wrong.so"), soname="libfoo.so.1")
    assert "SONAME libfoo.so.1" in _elf.identify(wrong).detail
    (tmp_path / "text").write_text("not a library" * 10)
    assert _elf.identify(str(tmp_path / "text")).detail == "not an ELF file"
    assert _elf.identify(str(tmp_path / "absent")).detail.startswith("unreadable")
    cut = tmp_path / "cut.so"
    cut.write_bytes(open(DROPIN, "rb").read()[:200])
    assert _elf.identify(str(cut)).detail == "malformed ELF file: section headers outside the file"


def test_status_enable_disable_round_trip(env):
    lib = env / "nvidia" / "cu13" / "lib" / "libcufile.so.0"
    before = snapshot(env)
    st = status(env)
    assert [(f["path"], f["kind"]) for f in st["files"] if f["scope"] == "env"] == \
        [(str(lib), "nvidia")]
    assert [m["what"] for m in st["mapped"]] == ["NVIDIA's libcufile"]
    assert "not ufile's" in st["verdict"]

    r = run(env, "enable")
    assert r.returncode == 0, r.stderr
    assert "now a link to" in r.stdout
    assert os.readlink(lib) == DROPIN
    manifest = json.loads((lib.parent / ".ufile-dropin" / "manifest.json").read_text())
    assert manifest["entries"]["libcufile.so.0"]["sha256"] == before["nvidia/cu13/lib/libcufile.so.0"][0]
    st = status(env)
    assert [m["path"] for m in st["mapped"]] == [os.path.realpath(DROPIN)]
    assert "ufile's libcufile only" in st["verdict"]

    enabled = snapshot(env)
    r = run(env, "enable")
    assert r.returncode == 0 and "nothing to change" in r.stdout, r.stdout + r.stderr
    assert snapshot(env) == enabled

    r = run(env, "disable")
    assert r.returncode == 0, r.stderr
    assert "restored" in r.stdout
    assert snapshot(env) == before  # same bytes, mode, mtime and inode; backup folder gone
    r = run(env, "disable")
    assert r.returncode == 0 and "nothing to change" in r.stdout
    assert snapshot(env) == before


def test_toolkit_links(tmp_path, fake_nvidia):
    """A toolkit's chain libcufile.so -> .so.0 -> .so.1.15.0: only the file is
    replaced, and every name then resolves to the drop-in."""
    lib = tmp_path / "cuda" / "targets" / "x86_64-linux" / "lib"
    lib.mkdir(parents=True)
    shutil.copy(fake_nvidia, lib / "libcufile.so.1.15.0")
    os.symlink("libcufile.so.1.15.0", lib / "libcufile.so.0")
    os.symlink("libcufile.so.0", lib / "libcufile.so")
    before = snapshot(tmp_path)
    r = run(tmp_path / "nosite", "enable", "--prefix", str(tmp_path / "cuda"))
    assert r.returncode == 0, r.stderr
    for name in ("libcufile.so", "libcufile.so.0", "libcufile.so.1.15.0"):
        assert os.path.realpath(lib / name) == os.path.realpath(DROPIN)
    assert os.readlink(lib / "libcufile.so.0") == "libcufile.so.1.15.0"
    r = run(tmp_path / "nosite", "disable", "--prefix", str(tmp_path / "cuda"))
    assert r.returncode == 0, r.stderr
    assert snapshot(tmp_path) == before
    refused(run(tmp_path / "nosite", "enable", "--prefix", str(tmp_path / "absent")),
            "no such folder")


def refused(r, words):
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refused, nothing changed" in r.stderr and words in r.stderr, r.stderr


def test_refuses_unknown_file(env):
    other = env / "nvidia" / "cufile" / "lib"
    other.mkdir(parents=True)
    build_lib(str(other / "libcufile.so.0"), marker=False)
    before = snapshot(env)
    refused(run(env, "enable"), "neither ufile's nor NVIDIA's")
    assert snapshot(env) == before
    (other / "libcufile.so.0").unlink()
    os.symlink(str(env / "absent.so"), other / "libcufile.so.0")  # dangling
    before = snapshot(env)
    refused(run(env, "enable"), "unreadable")
    assert snapshot(env) == before


def test_refuses_missing_dropin(env, fake_nvidia):
    before = snapshot(env)
    for bad, words in ((env / "absent.so", "absent"), (fake_nvidia, "NVIDIA's libcufile")):
        r = subprocess.run([sys.executable, "-m", "ufile.dropin", "enable", "--site-packages",
                            str(env), "--dropin", str(bad)], capture_output=True, text=True)
        refused(r, "drop-in libcufile.so.0 not found")
        assert words in r.stderr
    assert snapshot(env) == before


def test_refuses_without_permission(env, fake_nvidia):
    """Two wheel folders, one not writable: neither changes."""
    second = env / "nvidia" / "cufile" / "lib"
    second.mkdir(parents=True)
    shutil.copy(fake_nvidia, second / "libcufile.so.0")
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root ignores permissions, and setpriv (to run as nobody) is missing")
        nobody = 65534
        os.chown(env / "nvidia" / "cu13" / "lib", nobody, nobody)  # writable; second is not
        user = nobody
    else:
        os.chmod(second, 0o555)
        user = None
    before = snapshot(env)
    r = run(env, "enable", user=user)
    refused(r, f"no permission to change {second}")
    assert snapshot(env) == before


def test_disable_refuses_tampered_or_unknown(env, fake_nvidia):
    lib = env / "nvidia" / "cu13" / "lib" / "libcufile.so.0"
    assert run(env, "enable").returncode == 0
    saved = lib.parent / ".ufile-dropin" / "libcufile.so.0"
    os.chmod(saved, 0o700)
    with open(saved, "ab") as f:
        f.write(b"x")
    before = snapshot(env)
    refused(run(env, "disable"), "differs from what manifest.json recorded")
    assert snapshot(env) == before
    with open(saved, "r+b") as f:
        f.truncate(os.path.getsize(saved) - 1)
    os.chmod(saved, 0o755)
    lib.unlink()
    lib.write_text("someone else's file" * 10)
    before = snapshot(env)
    for cmd in ("disable", "enable"):
        refused(run(env, cmd), "move " + str(lib) + " away, then `disable` puts the original back")
        assert snapshot(env) == before
    lib.unlink()  # as the message says: then disable restores NVIDIA's file
    r = run(env, "disable")
    assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
    assert _elf.identify(str(lib)).kind == _elf.NVIDIA
    assert not (lib.parent / ".ufile-dropin").exists()


def test_failure_part_way_is_undone(env, fake_nvidia, monkeypatch):
    """The second folder's link fails: the first folder's change is undone."""
    second = env / "nvidia" / "cufile" / "lib"
    second.mkdir(parents=True)
    shutil.copy(fake_nvidia, second / "libcufile.so.0")
    before = snapshot(env)
    folders = dropin.env_folders([str(env)])
    plans = {f: _dropin_fs.plan_enable(f, DROPIN) for f in folders}
    assert len(plans) == 2 and all(plans.values())
    real_symlink, calls = os.symlink, []

    def flaky_symlink(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_symlink(src, dst)

    monkeypatch.setattr(os, "symlink", flaky_symlink)
    with pytest.raises(_dropin_fs.Refusal, match="undone, nothing changed"):
        _dropin_fs.apply_enable(plans, DROPIN)
    monkeypatch.undo()
    assert snapshot(env) == before


def test_status_without_the_module(env):
    r = run(env, "status", "--json", "--import", "no_such_module_here")
    st = json.loads(r.stdout)
    assert "ModuleNotFoundError" in st["probe_error"]
    assert st["verdict"].startswith("no process check")
    r = run(env, "status", "--import", "no_such_module_here")
    assert "not checked" in r.stdout and "verdict:" in r.stdout


def test_library_path_names_the_library_called(tmp_path):
    """Other libcufile files mapped before and after ufile's do not fool it."""
    early, late = tmp_path / "a" / "libcufile.so.0", tmp_path / "b" / "libcufile.so.0"
    for p in (early, late):
        p.parent.mkdir()
        build_lib(str(p), pad=True)
    code = ("import ctypes, sys, ufile\n"
            "ctypes.CDLL(sys.argv[1]); ufile.version(); ctypes.CDLL(sys.argv[2])\n"
            "print(ufile.library_path())\n")
    r = subprocess.run([sys.executable, "-c", code, str(early), str(late)],
                       capture_output=True, text=True, check=True)
    assert r.stdout.strip() == os.path.realpath(os.environ["UFILE_LIBRARY"])
