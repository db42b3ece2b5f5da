# SPDX-License-Identifier: Apache-2.0
"""python -m ufile.dropin under hostile conditions: several commands at
once, a command killed at each of its steps, a loader looking at the name
while it changes, and changes made behind its back (a drop-in deleted, a
wheel reinstalled). The originals must never be lost and every state must
be one the tool explains and can take back. Same stand-ins as
test_dropin_cpu.py."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from test_dropin_cpu import (DROPIN, build_lib, env, fake_nvidia, run,  # noqa: F401
                             snapshot)
from ufile import _dropin_fs, _elf, dropin

LIB = ("nvidia", "cu13", "lib", "libcufile.so.0")
# Runs the command in a process killed (os._exit) at its Nth change to the
# file system, as a kill -9 or a power cut would stop it.
KILLED_AT = r"""
import os, sys
from ufile import dropin
left = [int(sys.argv[1])]
def stopping(real):
    def call(*a, **k):
        left[0] -= 1
        if left[0] == 0:
            os._exit(99)
        return real(*a, **k)
    return call
for name in ("link", "symlink", "replace", "rename", "unlink", "mkdir", "rmdir"):
    setattr(os, name, stopping(getattr(os, name)))
sys.exit(dropin.main(sys.argv[2:]))
"""


def lib_path(site):
    return site.joinpath(*LIB)


def command(site, *args, dropin_path=DROPIN):
    return [sys.executable, "-m", "ufile.dropin", *args, "--site-packages", str(site),
            "--dropin", dropin_path]


def test_concurrent_enables_keep_the_original(env, tmp_path):
    """Eight `enable` at once, three times over, on a 4 MiB library: each
    ends in success, and `disable` then puts back the very same file."""
    shutil.copy(build_lib(str(tmp_path / "big.so"), pad=True), lib_path(env))
    before = snapshot(env)
    envv = dict(os.environ, PYTHONPATH=os.pathsep.join([str(env), os.environ["PYTHONPATH"]]))
    for _ in range(3):
        procs = [subprocess.Popen(command(env, "enable"), env=envv, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(8)]
        outs = []
        for p in procs:
            try:
                outs.append((p.wait(timeout=120), *p.communicate()))
            finally:
                p.kill()
        assert all(rc == 0 for rc, _, _ in outs), outs
        assert sum("now a link to" in out for _, out, _ in outs) == 1, outs
        assert os.readlink(lib_path(env)) == DROPIN
        r = run(env, "disable")
        assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
        assert snapshot(env) == before


def killed_run(site, step, *args):
    envv = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ["PYTHONPATH"]]))
    return subprocess.run([sys.executable, "-c", KILLED_AT, str(step), *args,
                           "--site-packages", str(site), "--dropin", DROPIN],
                          capture_output=True, text=True, env=envv, timeout=120).returncode


@pytest.mark.parametrize("killed", ["enable", "disable"])
def test_killed_at_every_step_is_recovered(env, killed):
    """The command is killed at its 1st, 2nd, ... change until one run
    completes. After each kill the library name exists, `status` reports the
    interrupted change by name, and `disable` brings back NVIDIA's file: same
    inode, bytes, mode and times."""
    before = snapshot(env)
    lib = lib_path(env)
    for step in range(1, 40):
        if killed == "disable":
            assert run(env, "enable").returncode == 0
        rc = killed_run(env, step, killed)
        assert os.path.lexists(lib), f"step {step}: {lib} is gone"
        if rc == 0:
            break
        assert rc == 99
        st = json.loads(run(env, "status", "--json", "--import", "fakecuda").stdout)
        listed = [f["path"] for f in st["files"]]
        assert str(lib) in listed, (step, st)
        pending = [p for p in st.get("pending", []) if p.get("op")]
        if pending:
            assert pending[0]["op"] == killed and pending[0]["names"] == ["libcufile.so.0"]
        r = run(env, "disable")
        assert r.returncode == 0, (step, r.stdout + r.stderr)
        assert snapshot(env) == before, f"killed at step {step}, then disable"
    else:
        pytest.fail("the command never completed")
    assert step > 3  # it was killed part-way at least thrice
    if killed == "enable":
        assert run(env, "disable").returncode == 0
    assert snapshot(env) == before


def test_the_name_never_disappears(env, monkeypatch):
    """After every change enable and disable make, the library name exists
    (a process loading it then never sees ENOENT)."""
    lib, missing = lib_path(env), []

    def watching(real):
        def call(*a, **k):
            out = real(*a, **k)
            if not os.path.lexists(lib):
                missing.append(f"{real.__name__}{a}")
            return out
        return call

    for name in ("link", "symlink", "replace", "rename", "unlink", "rmdir"):
        monkeypatch.setattr(os, name, watching(getattr(os, name)))
    for cmd in ("enable", "disable", "enable", "disable"):
        assert dropin.main([cmd, "--site-packages", str(env), "--dropin", DROPIN]) == 0
    monkeypatch.undo()
    assert not missing, f"{lib} did not exist after: {missing}"


def test_a_deleted_dropin_is_no_dead_end(env, tmp_path):
    """The drop-in the links point to is deleted (build tree removed, ufile
    uninstalled): disable restores; status says so; enable relinks."""
    before = snapshot(env)
    lib = lib_path(env)
    gone = tmp_path / "old" / "libcufile.so.0"
    for then in ("disable", "enable"):
        gone.parent.mkdir()
        shutil.copy(DROPIN, gone)
        r = run(env, "enable", dropin=str(gone))
        assert r.returncode == 0, r.stderr
        shutil.rmtree(gone.parent)
        if then == "enable":
            st = json.loads(run(env, "status", "--json", "--import", "fakecuda").stdout)
            assert "drop-in is gone" in [f for f in st["files"]
                                         if f["path"] == str(lib)][0].get("note", "")
            r = run(env, "enable")
            assert r.returncode == 0 and "now a link to" in r.stdout, r.stdout + r.stderr
            assert os.readlink(lib) == DROPIN
        r = run(env, "disable")
        assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
        assert snapshot(env) == before


def reinstall(lib, source):
    lib.unlink()
    shutil.copy(source, lib)


@pytest.mark.parametrize("same", [True, False], ids=["same-version", "new-version"])
def test_a_reinstalled_wheel_is_no_dead_end(env, tmp_path, same):
    """A reinstalled wheel puts NVIDIA's file back over the link: both commands
    succeed. disable leaves the new file; enable replaces it; the older
    original is removed when identical, else kept under a name of its own."""
    lib = lib_path(env)
    saved = lib.parent / ".ufile-dropin" / "libcufile.so.0"
    new = str(saved) if same else build_lib(str(tmp_path / "v2.so"), pad=True)
    assert run(env, "enable").returncode == 0
    reinstall(lib, new)
    reinstalled = snapshot(env)["/".join(LIB)]
    r = run(env, "disable")
    assert r.returncode == 0 and "reinstalled since enable" in r.stdout, r.stdout + r.stderr
    assert snapshot(env)["/".join(LIB)] == reinstalled
    assert run(env, "disable").stdout.startswith("nothing to change")

    assert run(env, "enable").returncode == 0
    reinstall(lib, new if not same else saved)
    reinstalled = snapshot(env)["/".join(LIB)]
    st = json.loads(run(env, "status", "--json", "--import", "fakecuda").stdout)
    assert "NVIDIA's file again" in [f for f in st["files"]
                                     if f["path"] == str(lib)][0].get("note", "")
    r = run(env, "enable")
    assert r.returncode == 0 and "now a link to" in r.stdout, r.stdout + r.stderr
    kept = [n for n in os.listdir(lib.parent / ".ufile-dropin") if "superseded" in n]
    assert len(kept) == (0 if same else 1)
    r = run(env, "disable")
    assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
    assert snapshot(env)["/".join(LIB)] == reinstalled
    assert _elf.identify(str(lib)).kind == _elf.NVIDIA


def test_a_read_only_mount_is_named(env, monkeypatch):
    """A folder on a read-only file system is reported as that, not as a
    permission problem."""
    real = os.statvfs

    class ReadOnly:
        def __init__(self, st):
            self.st = st

        def __getattr__(self, name):
            if name == "f_flag":
                return self.st.f_flag | os.ST_RDONLY
            return getattr(self.st, name)

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly(real(p)))
    monkeypatch.setattr(os, "access", lambda p, m: False)
    with pytest.raises(_dropin_fs.Refusal, match="mounted read-only"):
        _dropin_fs.plan_enable(str(lib_path(env).parent), DROPIN)


def test_a_second_command_waits_for_the_lock(env, monkeypatch):
    """flock(2) on the folder: a second command waits, then refuses, saying
    why; status tells a change under way from an interrupted one."""
    folder = str(lib_path(env).parent)
    monkeypatch.setattr(_dropin_fs, "LOCK_WAIT_S", 0.2)
    assert not _dropin_fs.busy(folder)
    with _dropin_fs.Locked([folder]):
        assert _dropin_fs.busy(folder)
        with pytest.raises(_dropin_fs.Refusal, match="another `python -m ufile.dropin` has "
                                                     "been changing"):
            with _dropin_fs.Locked([folder]):
                pass
    assert not _dropin_fs.busy(folder)


def test_an_interrupt_part_way_is_undone(env, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) between the backup and the link: enable
    undoes its steps before the interrupt goes on."""
    before = snapshot(env)

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "symlink", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dropin.main(["enable", "--site-packages", str(env), "--dropin", DROPIN])
    monkeypatch.undo()
    assert snapshot(env) == before


def test_a_deleted_link_is_put_back_by_disable(env):
    before = snapshot(env)
    lib = lib_path(env)
    assert run(env, "enable").returncode == 0
    lib.unlink()
    st = json.loads(run(env, "status", "--json", "--import", "fakecuda").stdout)
    assert [f.get("note") for f in st["files"] if f["path"] == str(lib)] == \
        ["missing: `disable` puts NVIDIA's original back"]
    r = run(env, "disable")
    assert r.returncode == 0 and "restored" in r.stdout, r.stdout + r.stderr
    assert snapshot(env) == before
