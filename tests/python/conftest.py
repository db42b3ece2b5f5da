# SPDX-License-Identifier: Apache-2.0
"""Fixtures shared by the Python tests."""
from __future__ import annotations

import shutil

import pytest

from fs_support import make_dir


@pytest.fixture
def io_dir(tmp_path):
    """A directory under $UFILE_TEST_TMPDIR (the filesystem under test), else tmp_path."""
    d = make_dir(tmp_path)
    yield d
    if d != tmp_path:
        shutil.rmtree(d, ignore_errors=True)
