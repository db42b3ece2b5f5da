# SPDX-License-Identifier: Apache-2.0
"""The collective load's reader (_dist_reader): gating reads first, and threads
kept for them, so a gating read never waits for a rank's own reads to end."""
from __future__ import annotations

import threading
import time

import pytest

from ufile.safetensors import _dist_reader, _engine


@pytest.fixture
def blocked(monkeypatch):
    """``_engine._read`` replaced: a piece ("own", i) blocks until released;
    every piece run is recorded in order."""
    release = threading.Event()
    ran: list = []

    def read(piece):
        ran.append(piece)
        if piece[0] == "own":
            assert release.wait(30), "never released"
    monkeypatch.setattr(_engine, "_read", read)
    yield release, ran
    release.set()


@pytest.mark.parametrize("threads", [2, 4, 8, 16])
def test_gating_read_runs_while_own_reads_hold_every_other_thread(blocked, threads):
    release, ran = blocked
    reader = _dist_reader.PriorityReader(threads, _dist_reader.gating_threads(threads))
    try:
        own = reader.submit([("own", i) for i in range(4 * threads)], (1, 0))
        _wait_running(ran, threads - _dist_reader.gating_threads(threads))
        time.sleep(0.1)   # every free thread has taken one
        gate = reader.submit([("gate", 0)], (0, 5))
        gate[0].result(timeout=10)   # would time out if own reads held every thread
        assert not any(f.done() for f in own)
        _finish(release, own)
    finally:
        release.set()
        reader.close()


def test_one_thread_runs_everything_in_priority_order(blocked):
    release, ran = blocked
    release.set()
    reader = _dist_reader.PriorityReader(1, _dist_reader.gating_threads(1))
    try:
        first = reader.submit([("hold", 0)], (0, 0))
        with reader._cv:   # queue the rest while nothing can be taken
            fs = reader.submit([("own", 1), ("own", 2)], (1, 0)) + \
                reader.submit([("gate", 3)], (0, 9)) + reader.submit([("gate", 2)], (0, 1))
        for f in first + fs:
            f.result(timeout=10)
        assert ran[1:] == [("gate", 2), ("gate", 3), ("own", 1), ("own", 2)]
    finally:
        reader.close()


def test_close_cancels_what_has_not_started(blocked):
    release, ran = blocked
    reader = _dist_reader.PriorityReader(2, 1)
    own = reader.submit([("own", i) for i in range(6)], (1, 0))
    threading.Timer(0.2, release.set).start()
    reader.close()
    assert sum(f.cancelled() for f in own) >= 5   # one thread took at most one
    with pytest.raises(RuntimeError, match="already closed"):
        reader.submit([("gate", 0)], (0, 0))


def test_gating_threads():
    assert [_dist_reader.gating_threads(n) for n in (1, 2, 7, 8, 16)] == [0, 1, 1, 2, 4]


def test_without_gating_threads_every_thread_takes_own_reads(blocked):
    """A load without collectives keeps no thread for gating reads."""
    release, ran = blocked
    reader = _dist_reader.PriorityReader(4, 0)
    try:
        own = reader.submit([("own", i) for i in range(8)], (1, 0))
        _wait_running(ran, 4)
        assert len(ran) == 4
        _finish(release, own)
    finally:
        release.set()
        reader.close()


def _wait_running(ran: list, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(ran) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(ran) >= count, ran


def _finish(release, futures: list) -> None:
    release.set()
    for f in futures:
        f.result(timeout=10)
