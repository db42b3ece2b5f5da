# SPDX-License-Identifier: Apache-2.0
"""Where the Python tests put their files: under $UFILE_TEST_TMPDIR when it is
set (the filesystem whose O_DIRECT is under test), else pytest's tmp_path; and
whether that filesystem takes O_DIRECT, probed without the code under test."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pathlib
import shutil
import signal
import tempfile
from typing import Iterator

import pytest


def make_dir(fallback: pathlib.Path) -> pathlib.Path:
    """A new directory under $UFILE_TEST_TMPDIR, or fallback where it is unset."""
    base = os.environ.get("UFILE_TEST_TMPDIR")
    if not base:
        return fallback
    os.makedirs(base, exist_ok=True)
    return pathlib.Path(tempfile.mkdtemp(prefix="py-", dir=base))


@contextlib.contextmanager
def module_dir(factory, name: str) -> Iterator[str]:
    """A module fixture's directory (``factory``: pytest's tmp_path_factory):
    make_dir's, removed afterwards when under $UFILE_TEST_TMPDIR."""
    fallback = factory.mktemp(name)
    d = make_dir(fallback)
    try:
        yield str(d)
    finally:
        if d != fallback:
            shutil.rmtree(d, ignore_errors=True)


def record_loader_files(monkeypatch) -> list:
    """The ufile.File objects the safetensors loader opens from now on."""
    from ufile.safetensors import _engine
    opened, real = [], _engine.open_for_read

    def spy(path, direct):
        f = real(path, direct)
        opened.append((f, opened_direct(f)))
        return f
    monkeypatch.setattr(_engine, "open_for_read", spy)
    return opened


def odirect_works(directory) -> bool:
    """Whether the filesystem of directory opens files with O_DIRECT."""
    probe = os.path.join(directory, ".odirect-probe")
    with open(probe, "wb") as f:
        f.write(b"\0" * 4096)
    try:
        os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
        return True
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        return False
    finally:
        os.unlink(probe)


def need_odirect(directory) -> None:
    """Skips, with the reason, where the filesystem refuses O_DIRECT."""
    if not odirect_works(directory):
        pytest.skip(f"{directory}: the filesystem refuses O_DIRECT (set UFILE_TEST_TMPDIR "
                    f"to a directory on one that takes it)")


def opened_direct(fd_or_file) -> bool:
    """Whether the descriptor has O_DIRECT set."""
    fd = fd_or_file if isinstance(fd_or_file, int) else fd_or_file.fileno()
    return bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT)


class DeadlineExceeded(AssertionError):
    """Not an OSError, so that code catching those cannot swallow it."""


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """DeadlineExceeded in the main thread after ``seconds``: a call that blocks
    (an open waiting for a FIFO's writer) fails its test instead of hanging it."""
    def expire(signum, frame):
        raise DeadlineExceeded(f"still waiting after {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
