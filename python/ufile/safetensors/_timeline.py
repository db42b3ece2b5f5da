# SPDX-License-Identifier: Apache-2.0
"""A per-rank timeline of a collective load or save, kept only when its
environment variable names a file prefix (UFILE_DIST_TRACE for loads,
UFILE_SAVE_TRACE for saves): (seconds since the call, event, details...)
entries, written as JSON to PREFIX.rankR.N.json (N counts this process's
timelines of that prefix). For measuring where the time goes; off by default."""
from __future__ import annotations

import itertools
import json
import os
import threading
import time
import warnings
from typing import Any

_count = itertools.count(1)


class Timeline:
    def __init__(self, env: str):
        self.prefix = os.environ.get(env)
        self.t0 = time.perf_counter()
        self.events: list | None = [] if self.prefix else None
        self._lock = threading.Lock()  # notes from several threads stay in time order

    def note(self, *event: Any) -> None:
        if self.events is not None:
            with self._lock:
                self.events.append((round(time.perf_counter() - self.t0, 6),) + event)

    def write(self, rank: int, events: list | None = None) -> None:
        """Writes ``events`` (default: this timeline's) for ``rank``."""
        events = self.events if events is None else events
        if not self.prefix or events is None:
            return
        path = f"{self.prefix}.rank{rank}.{next(_count)}.json"
        try:   # a timeline that cannot be written does not fail the load or save
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                json.dump(events, f)
        except OSError as exc:
            warnings.warn(f"ufile: timeline not written to {path}: {exc}", RuntimeWarning)
