# SPDX-License-Identifier: Apache-2.0
"""Where the Python tests put their files: under $UFILE_TEST_TMPDIR when it is
set (the filesystem whose O_DIRECT is under test), else pytest's tmp_path; and
whether that filesystem takes O_DIRECT, probed without the code under test."""
from __future__ import annotations

import errno
import fcntl
import os
import pathlib
import shutil
import tempfile

import pytest


@pytest.fixture
def io_dir(tmp_path):
    base = os.environ.get("UFILE_TEST_TMPDIR")
    if not base:
        yield tmp_path
        return
    os.makedirs(base, exist_ok=True)
    d = tempfile.mkdtemp(prefix="py-", dir=base)
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


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
