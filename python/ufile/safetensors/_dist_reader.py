# SPDX-License-Identifier: Apache-2.0
"""The reads of a collective load, on a fixed set of threads in priority order:
reads that gate a collective (lowest priority value: the collective's index)
run before reads into a rank's own tensors, so the reads other ranks wait for
are never queued behind reads nobody waits for."""
from __future__ import annotations

import concurrent.futures as _futures
import heapq
import itertools
import threading

from . import _engine


class PriorityReader:
    """Runs ``_engine`` pieces on ``threads`` threads, lowest priority first
    (ties in submission order). ``close`` cancels what has not started and
    waits for the rest."""

    def __init__(self, threads: int):
        self._heap: list = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"ufile-load-{i}",
                                          daemon=True) for i in range(max(1, threads))]
        for t in self._threads:
            t.start()

    def submit(self, pieces: list, priority: tuple) -> list[_futures.Future]:
        futures = []
        with self._cv:
            if self._closed:
                raise RuntimeError("ufile.safetensors: reader already closed")
            for p in pieces:
                f: _futures.Future = _futures.Future()
                heapq.heappush(self._heap, (priority, next(self._seq), p, f))
                futures.append(f)
            self._cv.notify(len(pieces))
        return futures

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._heap and not self._closed:
                    self._cv.wait()
                if not self._heap:
                    return
                _, _, piece, fut = heapq.heappop(self._heap)
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                _engine._read(piece)  # looked up per call: tests replace it
            except BaseException as exc:  # noqa: BLE001 - the future carries it
                fut.set_exception(exc)
            else:
                fut.set_result(None)

    def close(self) -> None:
        with self._cv:
            self._closed = True
            for _, _, _, fut in self._heap:
                fut.cancel()
            self._heap = []
            self._cv.notify_all()
        for t in self._threads:
            t.join()
