# SPDX-License-Identifier: Apache-2.0
"""A slow network, in one process: torch.distributed's collectives are
wrapped so that an asynchronous one counts as in flight until the caller
waits for it (as on a network that has not delivered yet), and each
collective whose buffer overlaps that of one still in flight is recorded.
gloo runs collectives on several threads and relays broadcasts from a
receiver's buffer, so such an overlap is a race that corrupts bytes; here it
is caught every time, whatever the timing."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

WATCHED = ("broadcast", "all_reduce", "all_to_all_single", "reduce_scatter_tensor",
           "_reduce_scatter_base", "all_gather_into_tensor")


class _Work:
    """A work that reports completion only once waited for."""

    def __init__(self, work: Any):
        self.work, self.waited = work, False

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        self.waited = True
        return self.work.wait(*args, **kwargs)

    def is_completed(self) -> bool:
        return self.waited

    def __getattr__(self, name: str) -> Any:
        return getattr(self.work, name)


@contextlib.contextmanager
def watch_buffers() -> Iterator[list]:
    """Yields the list of clashes found: (collective, earlier collective)."""
    import torch.distributed as dist
    live: list = []      # (lo, hi, what, work)
    clashes: list = []
    saved = {}

    def wrap(name: str, real: Any) -> Any:
        def spy(out: Any, *args: Any, **kwargs: Any) -> Any:
            lo = out.data_ptr()
            hi = lo + out.numel() * out.element_size()
            for a, b, what, w in live:
                if not w.waited and a < hi and lo < b:
                    clashes.append((name, what))
            work = real(out, *args, **kwargs)
            if not kwargs.get("async_op"):
                return work
            watched = _Work(work)
            live.append((lo, hi, name, watched))
            return watched
        return spy

    for name in WATCHED:
        if hasattr(dist, name):
            saved[name] = getattr(dist, name)
            setattr(dist, name, wrap(name, saved[name]))
    try:
        yield clashes
    finally:
        for name, real in saved.items():
            setattr(dist, name, real)
