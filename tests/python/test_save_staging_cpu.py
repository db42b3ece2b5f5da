# SPDX-License-Identifier: Apache-2.0
"""The pinned staging of asynchronous saves (_save_staging), its pinning
replaced by a recorder: one region kept and reused, a larger save replacing
it, a save beside another getting its own, free_save_staging, a failed
registration keeping nothing, the pages faulted in without
MADV_POPULATE_WRITE, and pinning that holds no other save up. (CUDA
registration itself: gpu_python_save.)"""
from __future__ import annotations

import pytest

from ufile.safetensors import _save_staging as staging, free_save_staging


class Pins:
    def __init__(self):
        self.pinned: dict[int, int] = {}
        self.fail = False

    def register(self, addr: int, size: int) -> None:
        if self.fail:
            raise OSError(12, "refused by the test")
        assert addr % staging.ALIGN == 0 and addr not in self.pinned
        self.pinned[addr] = size

    def unregister(self, addr: int) -> None:
        del self.pinned[addr]


@pytest.fixture
def pins(monkeypatch):
    p = Pins()
    monkeypatch.setattr(staging, "register", p.register)
    monkeypatch.setattr(staging, "unregister", p.unregister)
    free_save_staging()
    yield p
    free_save_staging()


def test_kept_region_is_reused(pins):
    a = staging.acquire(10_000)
    assert a.nbytes == 12288 and pins.pinned == {a.addr: 12288}
    a.tensor[:] = 7
    staging.release(a)
    b = staging.acquire(5000)
    assert b is a and len(pins.pinned) == 1 and staging.kept_bytes() == 12288
    staging.release(b)


def test_larger_save_replaces_the_kept_region(pins):
    a = staging.acquire(4096)
    staging.release(a)
    b = staging.acquire(3 * 4096)
    assert b is not a and pins.pinned == {b.addr: 3 * 4096}
    staging.release(b)
    assert staging.kept_bytes() == 3 * 4096


def test_save_beside_another_gets_its_own(pins):
    a = staging.acquire(4096)
    b = staging.acquire(4096)
    assert b is not a and set(pins.pinned) == {a.addr, b.addr}
    staging.release(b)
    assert set(pins.pinned) == {a.addr}  # the one-off is unpinned at once
    staging.release(a)
    assert set(pins.pinned) == {a.addr} and staging.kept_bytes() == 4096


def test_free_save_staging(pins):
    a = staging.acquire(4096)
    staging.release(a)
    free_save_staging()
    assert pins.pinned == {} and staging.kept_bytes() == 0
    b = staging.acquire(4096)
    free_save_staging()                # in use: let go when its save ends
    assert set(pins.pinned) == {b.addr}
    staging.release(b)
    assert pins.pinned == {}


def test_failed_registration_keeps_nothing(pins):
    pins.fail = True
    with pytest.raises(OSError, match="refused by the test"):
        staging.acquire(4096)
    assert staging.kept_bytes() == 0
    pins.fail = False
    staging.release(staging.acquire(4096))
    assert staging.kept_bytes() == 4096


def test_pages_faulted_in_without_populate_write(pins, monkeypatch):
    monkeypatch.setattr(staging, "_MADV_POPULATE_WRITE", 9999)  # EINVAL: zeros written
    monkeypatch.setattr(staging, "_PIECE", 8192)
    a = staging.acquire(5 * 4096)
    assert a.tensor.numel() == 5 * 4096 and int(a.tensor.sum()) == 0
    a.tensor[-1] = 3
    assert int(a.tensor[-1]) == 3
    staging.release(a)


def test_pinning_does_not_hold_up_other_saves(pins, monkeypatch):
    """A save pinning a new region (seconds for gigabytes) does not make
    another save's release, or kept_bytes, wait for it."""
    import threading
    a = staging.acquire(4096)          # kept, in use
    entered, go = threading.Event(), threading.Event()

    def slow_register(addr: int, size: int) -> None:
        entered.set()
        assert go.wait(30), "the test never let the pinning finish"
        pins.register(addr, size)
    monkeypatch.setattr(staging, "register", slow_register)
    got = []
    t = threading.Thread(target=lambda: got.append(staging.acquire(4096)))
    t.start()
    try:
        assert entered.wait(30), "the second save never started pinning"
        done = threading.Event()
        threading.Thread(target=lambda: (staging.release(a), staging.kept_bytes(),
                                         done.set()), daemon=True).start()
        assert done.wait(10), "release waited for another save's pinning"
    finally:
        go.set()
        t.join(30)
    assert not t.is_alive() and got and got[0] is not a
    # a was free by then and no larger: the new region is kept in its place
    assert staging.kept_bytes() == 4096 and set(pins.pinned) == {got[0].addr}
    staging.release(got[0])
