# SPDX-License-Identifier: Apache-2.0
"""A collective load's files opened ahead (_dist_files): every file opened
once, errors raised where the file is asked for, everything closed."""
from __future__ import annotations

import pytest

from ufile.safetensors._dist_files import Files


@pytest.fixture
def paths(tmp_path):
    out = []
    for i in range(3):
        p = tmp_path / f"f{i}.bin"
        p.write_bytes(bytes(range(256)) * 16)
        out.append(str(p))
    return out


def test_started_files_are_opened_once_and_closed(paths):
    files = Files(False)
    files.start(paths + paths[:1])
    got = [files.get(p) for p in paths]
    assert [f.path for f in got] == paths
    assert files.get(paths[0]) is got[0]
    files.close()
    assert all(f.closed for f in got)
    files.close()   # twice: nothing left to close


def test_a_file_not_started_is_opened_when_asked_for(paths):
    files = Files(False)
    files.start(paths[:1])
    try:
        assert files.get(paths[2]).path == paths[2]
    finally:
        files.close()


@pytest.mark.parametrize("started", [True, False])
def test_an_opening_that_fails_raises_where_the_file_is_asked_for(paths, tmp_path, started):
    missing = str(tmp_path / "missing.safetensors")
    files = Files(False)
    if started:
        files.start(paths + [missing])
    try:
        with pytest.raises(FileNotFoundError):
            files.get(missing)
        assert files.get(paths[1]).path == paths[1]
    finally:
        files.close()   # closes what opened; the failed one has nothing open
