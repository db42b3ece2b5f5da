# SPDX-License-Identifier: Apache-2.0
"""A load's tensors allocated on a thread of their own, in the order the load
first touches them: allocating gigabytes of outputs (cudaMalloc) then overlaps
the reads instead of holding up the thread that submits reads and issues
collectives. The thread allocates on the caller's CUDA stream and device, so
the tensors belong to that stream as if the caller had made them.

Before the first tensor the thread reserves the outputs' memory in the
caching allocator with one allocation, freed at once: torch then cuts each
tensor from that cached segment instead of calling cudaMalloc once per tensor
(on an H200, 291 tensors of 16 GB made one by one took 0.25-0.44 s of a load;
reserving the same in one allocation takes 3 ms). Each tensor still owns its
block: dropping it frees it for torch to reuse."""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Any, Callable

from ._format import DTYPES

LARGE = 1 << 20    # torch's caching allocator serves smaller blocks from its small pool


class Allocator:
    """``get(name)`` returns ``make(name)``, made ahead on the thread when
    ``name`` is in ``order``; a failure there is raised by ``get``."""

    def __init__(self, order: list, make: Callable[[str], Any], torch: Any, device: str,
                 note: Callable[..., None], reserve: int = 0):
        self.make, self.note = make, note
        self.reserve = reserve if device != "cpu" else 0
        self.device = device
        self.out: dict = {}
        self.error: BaseException | None = None
        self.cv = threading.Condition()
        self.stopping = False
        self.done = False
        if device != "cpu":
            # The caller's stream, taken here: asked for on the thread, it would be
            # device 0's, and asking creates device 0's context.
            stream = torch.cuda.current_stream(device)
            self.ctx = lambda: _cuda_ctx(torch, device, stream)
            self.torch = torch
        else:
            self.ctx = contextlib.nullcontext
        self.thread = threading.Thread(target=self._run, args=(list(order),),
                                       name="ufile-load-alloc", daemon=True)
        self.thread.start()

    def _run(self, order: list) -> None:
        try:
            with self.ctx():
                if self.reserve:
                    self._reserve()
                for name in order:
                    if self.stopping:
                        break
                    t = self.make(name)
                    self.note("alloc", name)
                    with self.cv:
                        self.out[name] = t
                        self.cv.notify_all()
        except BaseException as exc:  # noqa: BLE001 - raised by get()
            self.error = exc
        finally:
            with self.cv:
                self.done = True
                self.cv.notify_all()

    def _reserve(self) -> None:
        """One block of ``reserve`` bytes, unless torch holds that much free
        already; freed at once into torch's cache. Without the memory it is
        skipped: the tensors are then allocated one by one, as without it."""
        torch = self.torch
        if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() >= self.reserve:
            return
        try:
            block = torch.empty(self.reserve, dtype=torch.uint8, device=self.device)
        except RuntimeError:   # torch.cuda.OutOfMemoryError among others
            return
        del block
        self.note("reserved", self.reserve)

    def get(self, name: str) -> Any:
        with self.cv:
            while name not in self.out and not self.done:
                self.cv.wait()
            if name in self.out:
                return self.out[name]
            if self.error is not None:
                raise self.error
        t = self.make(name)   # not in the order (an empty tensor): made here
        with self.cv:
            return self.out.setdefault(name, t)

    def release(self, name: str) -> None:
        """Drops the allocator's reference (the caller's tensor now)."""
        with self.cv:
            self.out.pop(name, None)

    def has(self, name: str) -> bool:
        return name in self.out

    def close(self) -> None:
        """Stops the thread and drops every reference it holds: the tensors
        are the caller's alone from here."""
        self.stopping = True
        self.thread.join()
        with self.cv:
            self.out = {}


def large_pool_bytes(parts: Any) -> int:
    """Bytes that ``parts`` (_dist_plan.Part) take in torch's large pool:
    those of 1 MiB and more, each rounded up to 512 bytes as torch cuts them
    from a cached block (smaller ones come from its small pool)."""
    total = 0
    for part in parts:
        n = math.prod(part.shape) * DTYPES[part.dtype][0]
        if n >= LARGE:
            total += -(-n // 512) * 512
    return total


@contextlib.contextmanager
def _cuda_ctx(torch: Any, device: str, stream: Any) -> Any:
    # set_device, not torch.cuda.device(): leaving that would restore this
    # thread's previous device, device 0, whose context setting it creates.
    torch.cuda.set_device(device)
    with torch.cuda.stream(stream):
        yield
