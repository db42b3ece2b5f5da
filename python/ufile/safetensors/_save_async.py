# SPDX-License-Identifier: Apache-2.0
"""``save_checkpoint(..., blocking=False)``: the call returns once the tensors
are captured, the files are written and put in place by a background thread,
and ``wait()`` on the returned handle gives the outcome.

Capture, ``copy=True`` (default, or ``"host"``): each tensor's bytes are
copied, on the calling thread, to staging memory of the save (CUDA tensors:
pinned host memory kept by the process for its next save (_save_staging), the
copies queued on a side stream after the work already queued on the caller's
current stream, then waited for; CPU tensors: a copy), so the caller may
change or free the tensors as soon as the call returns.
``copy="device"``: CUDA tensors are copied to new memory on their own device
instead (a device-to-device copy, far faster than to the host, at the cost of
as much free device memory as the tensors take until the save ends).
``copy=False``: nothing is copied; the caller promises not to change the
tensors until ``wait()`` returns (the writer waits for the work queued on
each device's current stream at the time of the call, then reads the tensors
in place). Device staging is freed when the save ends; the pinned region is
given back to _save_staging then."""
from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable

from . import _save_staging
from ._save_format import Entry


class SaveHandle:
    """An asynchronous save. ``wait(timeout=None)`` blocks until the checkpoint
    is in place and flushed, and raises the save's exception if it failed (each
    call raises it again); ``done()`` says whether it ended. ``times``: seconds
    from the call to ``captured`` (the call returned), ``written`` (files
    flushed under temporary names) and ``durable`` (in place, directory
    flushed)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._error: BaseException | None = None
        self.times: dict[str, float] = {}
        self._t0 = time.perf_counter()
        self._thread: threading.Thread | None = None

    def mark(self, what: str) -> None:
        self.times[what] = time.perf_counter() - self._t0

    def done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> None:
        if not self._event.wait(timeout):
            raise TimeoutError(f"the save did not end within {timeout} s")
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error

    result = wait

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._event.wait(timeout):
            raise TimeoutError(f"the save did not end within {timeout} s")
        return self._error

    def _run(self, job: Any) -> None:
        try:
            job(self)
        except BaseException as exc:  # noqa: BLE001 - kept for wait()
            self._error = exc
        finally:
            self._event.set()

    def start(self, job: Any) -> "SaveHandle":
        self._thread = threading.Thread(target=self._run, args=(job,),
                                        name="ufile-save", daemon=False)
        self._thread.start()
        return self


COPY_MODES = (True, False, "host", "device")


def capture(entries: list[Entry], copy: bool | str) -> tuple[list, Callable[[], None]]:
    """Makes the entries' sources safe to read after the call returns: copies
    (``copy``: True or "host", "device") or CUDA events marking the work queued
    so far (False). Returns the events the writer must wait for (empty when
    copied) and what to call once the writes have ended (it gives the pinned
    staging back)."""
    cuda = [e for e in entries if e.source is not None and getattr(e.source, "is_cuda", False)]
    if copy is False:
        return _events(cuda), _nothing
    import torch
    for e in entries:
        if e.source is not None and not getattr(e.source, "is_cuda", False):
            e.source = e.source.clone() if isinstance(e.source, torch.Tensor) else e.source.copy()
    if not cuda:
        return [], _nothing
    staging, done = None, _nothing
    if copy != "device":
        staging, done = _host_staging(sum(_aligned(e.nbytes) for e in cuda))
    try:
        by_device: dict = {}
        for e in cuda:
            by_device.setdefault(e.source.device, []).append(e)
        offset = 0
        for device, group in by_device.items():
            side = torch.cuda.Stream(device=device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for e in group:
                    src = e.source.reshape(-1).view(torch.uint8)
                    if staging is None:
                        dst = torch.empty(e.nbytes, dtype=torch.uint8, device=device)
                    else:
                        dst = staging[offset:offset + e.nbytes]
                        offset += _aligned(e.nbytes)
                    dst.copy_(src, non_blocking=True)
                    e.source = dst
            side.synchronize()
    except BaseException:
        done()
        raise
    return [], done


def _host_staging(nbytes: int) -> tuple[Any, Callable[[], None]]:
    """(a pinned uint8 tensor of at least ``nbytes``, what gives it back): the
    process's kept region, or torch's pinned memory where registering fails."""
    try:
        region = _save_staging.acquire(nbytes)
    except OSError as exc:
        import torch
        warnings.warn(f"ufile.safetensors: pinned staging not registered ({exc}); the save "
                      f"copies into torch's pinned memory instead", RuntimeWarning)
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True), _nothing
    return region.tensor, lambda: _save_staging.release(region)


def _aligned(n: int) -> int:
    return -(-n // _save_staging.ALIGN) * _save_staging.ALIGN


def _nothing() -> None:
    pass


def _events(cuda: list[Entry]) -> list:
    if not cuda:
        return []
    import torch
    out = []
    for device in {e.source.device for e in cuda}:
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream(device))
        out.append(ev)
    return out
