# SPDX-License-Identifier: Apache-2.0
"""save_checkpoint's Hugging Face layout: huggingface_hub's shard rule (the
examples of its documentation and the edge cases of its statement), file
names, the index as transformers writes it, each shard byte for byte what
save_file writes for its tensors, and the checkpoint loaded back by
load_checkpoint. test_save_gpu.py compares with huggingface_hub itself."""
from __future__ import annotations

import json
import os

import pytest
import torch
from fs_support import deadline, need_odirect, odirect_works

from ufile.safetensors import _save_shards as sh
from ufile.safetensors import load_checkpoint, save, save_checkpoint


def _split(sizes: list, limit: int, storage=None) -> list:
    names = [f"t{i}" for i in range(len(sizes))]
    size = dict(zip(names, sizes))
    sid = dict(zip(names, storage or [None] * len(sizes)))
    return [[int(n[1:]) for n in s] for s in sh.split(names, size.get, sid.get, limit)]


@pytest.mark.parametrize("sizes,limit,want", [
    ([6, 6, 2, 6, 2, 2], 10, [[0], [1, 2], [3, 4, 5]]),  # huggingface_hub's docstring example
    ([2, 12, 2], 5, [[1], [0, 2]]),          # too large: its own shard, ahead of the open one
    ([5, 5, 5], 5, [[0], [1], [2]]),         # exactly the limit fits
    ([3, 3], 5, [[0], [1]]),
    ([1] * 7, 3, [[0, 1, 2], [3, 4, 5], [6]]),
    ([0, 0, 4, 0], 4, [[0, 1, 2, 3]]),
])
def test_shard_rule(sizes, limit, want):
    assert _split(sizes, limit) == want


def test_shared_storage_follows_its_first_tensor():
    # t1 and t3 share a storage: t3 is not counted and lands in t1's shard
    assert _split([4, 4, 4, 4], 8, [None, "s", None, "s"]) == [[0, 1, 3], [2]]


@pytest.mark.parametrize("text,want", [
    ("5GB", 5 * 10**9), ("500MB", 5 * 10**8), (" 1.5 GB", 15 * 10**8), ("10KB", 10**4),
    ("2TB", 2 * 10**12), ("1GiB", 2**30), ("64MiB", 2**26), ("3kib", 3 * 1024), (123, 123)])
def test_sizes(text, want):
    assert sh.parse_size(text) == want


@pytest.mark.parametrize("bad", ["5 GBs", "GB", "-1GB", "5", 0, -3, "x5MB"])
def test_bad_sizes(bad):
    with pytest.raises(ValueError, match="max_shard_size"):
        sh.parse_size(bad)


def test_file_names():
    assert sh.file_names(1) == ["model.safetensors"]
    assert sh.file_names(3) == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert sh.file_names(100001)[-1] == "model-100001-of-100001.safetensors"


def _state(n: int = 7) -> dict:
    g = torch.Generator().manual_seed(1)
    sd = {f"model.layers.{i}.w": torch.randn(10 + i, 8, generator=g) for i in range(n)}
    sd["lm_head.weight"] = torch.randn(30, 8, generator=g).to(torch.bfloat16)
    sd["model.step"] = torch.tensor(5)
    return sd


def test_sharded_layout_and_index(io_dir):
    sd = _state()
    d = os.path.join(io_dir, "ck")
    save_checkpoint(sd, d, max_shard_size=1200, metadata={"step": "5"})
    layout, index = sh.plan(sd, 1200)
    assert sorted(os.listdir(d)) == sorted(list(layout) + ["model.safetensors.index.json"])
    text = open(os.path.join(d, "model.safetensors.index.json"), encoding="utf-8").read()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    sizes = {k: v.numel() * v.element_size() for k, v in sd.items()}
    assert doc["metadata"] == {"total_size": sum(sizes.values())}
    assert set(doc["weight_map"]) == set(sd)
    for name, names in layout.items():
        assert {n for n, f in doc["weight_map"].items() if f == name} == set(names)
        shard = {n: sd[n] for n in names}
        assert open(os.path.join(d, name), "rb").read() == \
            save(shard, metadata={"format": "pt", "step": "5"})
        assert sum(sizes[n] for n in names) <= 1200 or len(names) == 1
    back = load_checkpoint(d)
    assert set(back) == set(sd)
    for k in sd:
        assert torch.equal(back[k], sd[k]), k


def test_an_index_that_is_a_fifo_is_replaced(io_dir):
    """A FIFO where the index goes is no previous checkpoint: the save puts
    its index in its place instead of waiting for a writer to open it."""
    sd = _state()
    index = os.path.join(io_dir, "model.safetensors.index.json")
    os.mkfifo(index)
    with deadline(30):
        save_checkpoint(sd, io_dir, max_shard_size=1200)
    assert os.path.isfile(index)
    back = load_checkpoint(io_dir)
    assert set(back) == set(sd) and all(torch.equal(back[k], sd[k]) for k in sd)


def test_one_shard_has_no_index(io_dir):
    sd = _state(3)
    save_checkpoint(sd, io_dir)
    assert os.listdir(io_dir) == ["model.safetensors"]
    assert open(os.path.join(io_dir, "model.safetensors"), "rb").read() == \
        save(sd, metadata={"format": "pt"})


def test_empty_state_dict(io_dir):
    save_checkpoint({}, io_dir)
    assert os.listdir(io_dir) == ["model.safetensors"]
    assert load_checkpoint(io_dir) == {}


def test_views_of_one_storage_stay_together(io_dir):
    base = torch.arange(64, dtype=torch.float32)
    sd = {"a": base[:32], "x": torch.zeros(40), "b": base[32:]}
    save_checkpoint(sd, io_dir, max_shard_size=200)
    doc = json.load(open(os.path.join(io_dir, "model.safetensors.index.json")))
    assert doc["weight_map"]["a"] == doc["weight_map"]["b"]
    assert doc["metadata"]["total_size"] == 256 + 160  # the storage counted once
    back = load_checkpoint(io_dir)
    assert torch.equal(back["a"], base[:32]) and torch.equal(back["b"], base[32:])


def test_refusals_before_anything_is_written(io_dir):
    d = os.path.join(io_dir, "ck")
    base = torch.zeros(8)
    with pytest.raises(RuntimeError, match="share memory"):
        save_checkpoint({"a": base, "b": base[2:]}, d)
    with pytest.raises(ValueError, match="non contiguous"):
        save_checkpoint({"a": torch.zeros(3, 4).T}, d)
    with pytest.raises(TypeError, match="metadata"):
        save_checkpoint({"a": base}, d, metadata={"step": 5})
    with pytest.raises(ValueError, match="max_shard_size"):
        save_checkpoint({"a": base}, d, max_shard_size="big")
    assert not os.path.exists(d)


def test_buffered_writes_start_their_writeback(io_dir, monkeypatch):
    """A buffered save asks the kernel to start writing back every range it
    wrote (sync_file_range), each byte once, so the disk takes the bytes
    while the rest are written; a direct save has no dirty pages to ask for."""
    from ufile.safetensors import _save_io
    seen: list = []
    monkeypatch.setattr(_save_io, "start_writeback",
                        lambda fd, offset, size: seen.append((offset, size)))
    sd = {f"layers.{i}.w": torch.arange(3000 + i, dtype=torch.float32) for i in range(6)}
    d = os.path.join(io_dir, "buffered")
    save_checkpoint(sd, d, max_shard_size=30000, request_bytes=4096)
    files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    assert len(files) > 1
    assert sum(n for _, n in seen) == sum(os.path.getsize(os.path.join(d, f)) for f in files)
    if odirect_works(io_dir):   # tmpfs does not take it
        seen.clear()
        save_checkpoint(sd, os.path.join(io_dir, "direct"), max_shard_size=30000, direct=True)
        assert seen == []


class _Meeting:
    """A save seam whose writes wait, up to a deadline shared by all, until
    writes into two different files are in flight at once: ``met`` says
    whether they were."""

    def __init__(self, real, seconds: float = 2.0):
        import threading
        import time
        self.real, self.active, self.lock = real, {}, threading.Lock()
        self.met, self.deadline = threading.Event(), time.monotonic() + seconds

    def __getattr__(self, name):
        return getattr(self.real, name)

    def write(self, f, *args):
        import time
        with self.lock:
            self.active[f.path] = self.active.get(f.path, 0) + 1
            if sum(1 for n in self.active.values() if n) >= 2:
                self.met.set()
        try:
            self.met.wait(max(0.0, self.deadline - time.monotonic()))
            return self.real.write(f, *args)
        finally:
            with self.lock:
                self.active[f.path] -= 1


@pytest.mark.parametrize("direct", [False, True])
def test_buffered_files_are_written_side_by_side(io_dir, monkeypatch, direct):
    """Buffered, the shard files are written side by side (a buffered write
    holds its file's lock); with O_DIRECT one after another. Either way the
    checkpoint is the one written file by file."""
    from ufile.safetensors import _save_checkpoint, _save_io
    if direct:
        need_odirect(io_dir)
    sd = {f"layers.{i}.w": torch.arange(3000 + i, dtype=torch.float32) for i in range(6)}
    meeting = _Meeting(_save_io.IO)
    monkeypatch.setattr(_save_io, "IO", meeting)
    d = os.path.join(io_dir, "ck")
    save_checkpoint(sd, d, max_shard_size=30000, direct=direct)
    assert meeting.met.is_set() is not direct, meeting.active
    monkeypatch.setattr(_save_io, "IO", meeting.real)
    monkeypatch.setattr(_save_checkpoint, "FILES_AT_ONCE", 1)
    want = os.path.join(io_dir, "one_by_one")
    save_checkpoint(sd, want, max_shard_size=30000)
    assert sorted(os.listdir(d)) == sorted(os.listdir(want))
    for name in os.listdir(want):
        assert open(os.path.join(d, name), "rb").read() == \
            open(os.path.join(want, name), "rb").read(), name
