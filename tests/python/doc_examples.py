# SPDX-License-Identifier: Apache-2.0
"""The examples of the user documentation, as the tests find and run them.

Every fenced block in a program's language (sh, bash, python, dockerfile) of
DOCS carries, on the line before its fence, a marker saying which test runs it:

  <!-- doc-test: cpu -->             this file's CPU test (CI)
  <!-- doc-test: gpu -->             the GPU test (label gpu)
  <!-- doc-test: readme-command -->  tests/packaging/readme_command_test.sh
  <!-- doc-test: not run (why) -->   nothing, for the reason given
  <!-- doc-test: output -->          (on a text block) what the command
                                     block before it prints on stdout

A python block whose first line is a comment naming a file ("# load.py: ...")
is that file: it is written into the work folder, and a command block runs
it. Other python blocks run as they are; sh blocks run with `sh -e`, in the
work folder, `python3` (and `torchrun`) being the interpreter of the test."""
from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
from dataclasses import dataclass

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = ("README.md", "docs/PYTHON.md", "docs/DISTRIBUTED.md")
PROGRAM_LANGS = {"sh", "bash", "python", "dockerfile"}
KINDS = {"cpu", "gpu", "readme-command", "output"}
_MARK = re.compile(r"^\s*<!-- doc-test: (.*?) -->\s*$")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_FILE = re.compile(r"^# ([\w.-]+\.py)\b")


@dataclass
class Block:
    doc: str
    line: int         # of the opening fence, 1-based
    lang: str
    kind: str | None  # None: no marker; "not run" with reason
    reason: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def file(self) -> str | None:
        """The file name a python block is, or None."""
        m = _FILE.match(self.text) if self.lang == "python" else None
        return m.group(1) if m else None


def blocks(doc: str) -> list[Block]:
    """Every fenced block of DOC (a path relative to the repository root)."""
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        kind, reason = None, ""
        mark = _MARK.match(lines[start - 1]) if start > 0 else None
        if mark:
            kind = mark.group(1)
            if kind.startswith("not run (") and kind.endswith(")"):
                kind, reason = "not run", kind[len("not run ("):-1]
        out.append(Block(doc, start + 1, lang, kind, reason, "\n".join(body) + "\n"))
    return out


def problems(doc: str) -> list[str]:
    """What is wrong with DOC's markers: a program block without one, an
    unknown marker, an output block after no command, a file no command runs."""
    bad = []
    bs = blocks(doc)
    commands = " ".join(b.text for b in bs if b.lang in ("sh", "bash"))
    for k, b in enumerate(bs):
        if b.kind is None:
            if b.lang in PROGRAM_LANGS:
                bad.append(f"{b.where}: a {b.lang} block without a doc-test marker: put "
                           f"'<!-- doc-test: cpu -->' (or gpu, or 'not run (why)') on the "
                           f"line before its fence (tests/python/doc_examples.py)")
        elif b.kind not in KINDS and b.kind != "not run":
            bad.append(f"{b.where}: unknown marker 'doc-test: {b.kind}'")
        elif b.kind == "not run" and not b.reason:
            bad.append(f"{b.where}: 'not run' without a reason")
        elif b.kind == "output" and (k == 0 or bs[k - 1].lang not in ("sh", "bash")):
            bad.append(f"{b.where}: an output block that follows no command block")
        elif b.file and b.file not in commands:
            bad.append(f"{b.where}: {b.file} is run by no command block of {doc}")
    return bad


def _python_shim(folder: str) -> str:
    """A folder whose python3 and torchrun are this interpreter's (the docs'
    `python3`: the virtual environment's once activated)."""
    os.makedirs(folder, exist_ok=True)
    for name, args in (("python3", ""), ("torchrun", " -m torch.distributed.run")):
        shim = os.path.join(folder, name)
        with open(shim, "w") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}"{args} "$@"\n')
        os.chmod(shim, os.stat(shim).st_mode | stat.S_IXUSR)
    return folder


def _run(argv: list, cwd: str, env: dict, deadline: float) -> tuple[int, str, str]:
    """Runs argv in its own process group, killed (all of it) at the deadline;
    its exit status, stdout and stderr."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{argv}: still running after {deadline} s (killed)\n"
                             f"stdout:\n{out}\nstderr:\n{err}") from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what it left behind
        except ProcessLookupError:
            pass
    return proc.returncode, out, err


def run(doc: str, kind: str, work: str, deadline: float = 180) -> list[str]:
    """Writes DOC's file blocks into WORK, runs its KIND blocks in order and
    checks each output block; returns a line per block run. Raises
    AssertionError naming the block that failed."""
    env = dict(os.environ)
    env["PATH"] = _python_shim(os.path.join(work, ".bin")) + os.pathsep + env.get("PATH", "")
    for var in ("PYTHONPATH", "UFILE_LIBRARY"):  # the blocks run in WORK
        if env.get(var):
            env[var] = os.pathsep.join(os.path.abspath(p) for p in env[var].split(os.pathsep))
    bs = blocks(doc)
    for b in bs:
        if b.file:
            with open(os.path.join(work, b.file), "w") as f:
                f.write(b.text)
    done, last = [], None
    for b in bs:
        if b.kind == "output" and last is not None:
            want = [w for w in b.text.split("\n") if w]
            got = [g for g in last.split("\n") if g]
            assert got == want, (f"{b.where}: the command before prints\n" + "\n".join(got) +
                                 "\nbut the doc shows\n" + "\n".join(want))
            done.append(f"{b.where}: output as shown")
            continue
        last = None
        if b.kind != kind or b.file:
            continue
        if b.lang == "python":
            script = os.path.join(work, f"_example_{b.line}.py")
            with open(script, "w") as f:
                f.write(b.text)
            argv = ["python3", script]
        elif b.lang in ("sh", "bash"):
            argv = [b.lang, "-ec", b.text]
        else:
            raise AssertionError(f"{b.where}: cannot run a {b.lang} block")
        rc, out, err = _run(argv, work, env, deadline)
        assert rc == 0, (f"{b.where}: exit status {rc}:\n{b.text}\n--- stdout:\n{out}\n"
                         f"--- stderr:\n{err}")
        last = out
        done.append(f"{b.where}: {b.lang} block ran")
    return done
