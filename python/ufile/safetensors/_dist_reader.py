# SPDX-License-Identifier: Apache-2.0
"""The reads of a collective load, on a fixed set of threads in priority order:
reads that gate a collective (priority class 0) run before reads into a rank's
own tensors (class 1), so the reads other ranks wait for are never queued
behind reads nobody waits for. Some of the threads take gating reads only: a
read already started is not pre-empted, and a rank's own reads (up to
request_bytes each) would otherwise hold every thread while a gating read
waits, which holds back the collective and every rank that receives it."""
from __future__ import annotations

import concurrent.futures as _futures
import heapq
import itertools
import threading

from . import _engine


def gating_threads(threads: int) -> int:
    """Of ``threads``, those that take only gating reads: a quarter, at least
    one when there are two or more."""
    return max(1, threads // 4) if threads >= 2 else 0


class PriorityReader:
    """Runs ``_engine`` pieces on ``threads`` threads, lowest priority first
    (ties in submission order); ``gating`` of them take only pieces of
    priority class 0 (``gating_threads(threads)`` for a load with
    collectives, 0 for one without). ``close`` cancels what has not started
    and waits for the rest."""

    def __init__(self, threads: int, gating: int):
        threads = max(1, threads)
        self._heap: list = []          # class 0 (gating), lowest first
        self._rest: list = []          # every other class
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, args=(i < gating,),
                                          name=f"ufile-load-{i}", daemon=True)
                         for i in range(threads)]
        for t in self._threads:
            t.start()

    def submit(self, pieces: list, priority: tuple) -> list[_futures.Future]:
        futures = []
        with self._cv:
            if self._closed:
                raise RuntimeError("ufile.safetensors: reader already closed")
            heap = self._heap if priority[0] == 0 else self._rest
            for p in pieces:
                f: _futures.Future = _futures.Future()
                heapq.heappush(heap, (priority, next(self._seq), p, f))
                futures.append(f)
            self._cv.notify_all()   # a gating-only thread may be the one to wake
        return futures

    def _work(self, gating_only: bool) -> None:
        while True:
            with self._cv:
                while not self._heap and (gating_only or not self._rest) and not self._closed:
                    self._cv.wait()
                if self._heap:
                    _, _, piece, fut = heapq.heappop(self._heap)
                elif self._rest and not gating_only:
                    _, _, piece, fut = heapq.heappop(self._rest)
                else:
                    return
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
            for _, _, _, fut in self._heap + self._rest:
                fut.cancel()
            self._heap, self._rest = [], []
            self._cv.notify_all()
        for t in self._threads:
            t.join()
