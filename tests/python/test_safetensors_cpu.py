# SPDX-License-Identifier: Apache-2.0
"""ufile.safetensors on the CPU (torch and numpy), against files written by an
independent writer (st_writer): every dtype, views and owning tensors, slices,
sharded checkpoints, and the bad-input table."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import bad_files
import st_writer
from fs_support import deadline, need_odirect, record_loader_files
from ufile import safetensors as us

RNG = np.random.default_rng(5)
# safetensors dtype -> numpy dtype used to make its bytes (None: raw bytes only)
NP = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
      "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32,
      "F64": np.float64, "I64": np.int64, "U64": np.uint64, "C64": np.complex64,
      "BF16": None, "F8_E4M3": None, "F8_E5M2": None, "F8_E8M0": None}
SIZE = {k: v[0] for k, v in us.DTYPES.items()}
SHAPES = [(), (0,), (1,), (5, 3), (2, 3, 4), (64, 129)]


def _raw(dtype, shape):
    n = int(np.prod(shape, dtype=np.int64)) * SIZE[dtype]
    raw = RNG.integers(0, 256, n, dtype=np.uint8)
    if dtype == "BOOL":
        raw %= 2
    return raw.tobytes()


def _torch_dtype(dtype):
    return getattr(torch, us.DTYPES[dtype][1], None)


def _entries(align_break=False):
    entries = []
    if align_break:
        entries.append(("odd", "U8", (3,), b"\x07\x08\x09"))
    for dt in sorted(NP):
        for i, shape in enumerate(SHAPES):
            entries.append((f"{dt.lower()}.{i}", dt, shape, _raw(dt, shape)))
    return entries


def _bytes_of(t):
    if isinstance(t, np.ndarray):
        return t.tobytes()
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


@pytest.fixture
def every_dtype(tmp_path):
    entries = _entries()
    path = st_writer.write(str(tmp_path / "all.safetensors"), entries, {"k": "v"})
    return path, entries


def _torch_entries(entries):
    return [e for e in entries if _torch_dtype(e[1]) is not None]


@pytest.mark.parametrize("opts", [{}, {"max_device_bytes": 1 << 20}, {"request_bytes": 0},
                                  {"direct": True, "request_bytes": 4096, "inflight": 2},
                                  {"request_bytes": 3 * 4096 + 5, "inflight": 3}])
def test_torch_every_dtype(io_dir, monkeypatch, opts):
    entries = _torch_entries(_entries(align_break=True))
    path = st_writer.write(str(io_dir / "t.safetensors"), entries, align=1)
    if opts.get("direct"):
        need_odirect(io_dir)
    opened = record_loader_files(monkeypatch)
    out = us.load_file(path, **opts)
    if opts.get("direct"):
        assert [(f.direct, fd_direct) for f, fd_direct in opened] == [(True, True)]
    assert list(out) == [e[0] for e in entries]  # file order, as safetensors' load_file
    for name, dtype, shape, raw in entries:
        t = out[name]
        assert t.dtype == _torch_dtype(dtype) and tuple(t.shape) == shape, name
        assert t.device.type == "cpu" and _bytes_of(t) == raw, name


def test_views_share_one_buffer_per_run(tmp_path):
    entries = [(f"t{i}", "F32", (1000,), _raw("F32", (1000,))) for i in range(10)]
    path = st_writer.write(str(tmp_path / "v.safetensors"), entries)
    out = us.load_file(path, request_bytes=3 * 4096)  # 4000-byte tensors: 2 a run
    storages = {n: t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage")
                else t.storage().data_ptr() for n, t in out.items()}
    assert len(set(storages.values())) == 5  # t0+t1, t2+t3, ...: one buffer a pair
    assert all(storages[f"t{i}"] == storages[f"t{i + 1}"] for i in range(0, 10, 2))
    assert all(_bytes_of(out[e[0]]) == e[3] for e in entries)
    whole = us.load_file(path, request_bytes=0)
    assert len({t.storage().data_ptr() for t in whole.values()}) == 1


def test_dtype_missing_from_torch_is_a_clear_error(tmp_path):
    missing = [d for d in NP if _torch_dtype(d) is None]
    if not missing:
        pytest.skip(f"torch {torch.__version__} has every safetensors dtype")
    path = st_writer.write(str(tmp_path / "m.safetensors"),
                           [("w", missing[0], (2,), _raw(missing[0], (2,)))])
    with pytest.raises(us.SafetensorError, match=f"{missing[0]}.*torch"):
        us.load_file(path)


def test_numpy_every_dtype(every_dtype):
    path, entries = every_dtype
    ok = [e for e in entries if NP[e[1]] is not None]
    with us.safe_open(path, framework="np") as f:
        assert f.metadata() == {"k": "v"}
        assert f.keys() == sorted(e[0] for e in entries)
        for name, dtype, shape, raw in ok:
            a = f.get_tensor(name)
            assert a.dtype == np.dtype(NP[dtype]) and a.shape == shape and a.tobytes() == raw
        with pytest.raises(us.SafetensorError, match="BF16"):
            f.get_tensor("bf16.1")
    from ufile.safetensors.numpy import load_file
    with pytest.raises(us.SafetensorError):
        load_file(path)  # holds BF16: numpy has no such dtype


def test_safe_open_torch_and_missing_key(every_dtype):
    path, entries = every_dtype
    with us.safe_open(path, framework="pt", device="cpu") as f:
        for name, dtype, shape, raw in _torch_entries(entries):
            assert _bytes_of(f.get_tensor(name)) == raw
        with pytest.raises(us.SafetensorError, match="nope"):
            f.get_tensor("nope")
        with pytest.raises(us.SafetensorError):
            f.get_slice("nope")


@pytest.mark.parametrize("index", [slice(1, 4), slice(None, 2), slice(-2, None), 3, -1,
                                   (slice(None), slice(2, 5)), (slice(10, 20), 7),
                                   (Ellipsis, slice(0, 1)), slice(0, 64, 5), slice(9, 3)])
@pytest.mark.parametrize("framework", ["pt", "np"])
def test_slices(tmp_path, index, framework):
    full = RNG.standard_normal((64, 129)).astype(np.float32)
    path = st_writer.write(str(tmp_path / "s.safetensors"),
                           [("w", "F32", full.shape, full.tobytes())])
    with us.safe_open(path, framework=framework) as f:
        sl = f.get_slice("w")
        assert sl.get_shape() == [64, 129] and sl.get_dtype() == "F32"
        got = sl[index]
        got = got.numpy() if framework == "pt" else got
        assert np.array_equal(got, full[index])


def test_row_slice_reads_only_its_rows(tmp_path, monkeypatch):
    full = np.arange(100 * 10, dtype=np.int64).reshape(100, 10)
    path = st_writer.write(str(tmp_path / "r.safetensors"),
                           [("w", "I64", full.shape, full.tobytes())])
    sizes = []
    import ufile.safetensors._engine as eng
    real = eng.split
    monkeypatch.setattr(eng, "split", lambda *a, **k: sizes.append(a[2]) or real(*a, **k))
    with us.safe_open(path, framework="np") as f:
        assert np.array_equal(f.get_slice("w")[40:45], full[40:45])
    assert sizes == [5 * 10 * 8]


def _sharded(tmp_path, n=3, index=True):
    d = tmp_path / "ckpt"
    d.mkdir()
    wmap, want = {}, {}
    for s in range(n):
        entries = [(f"s{s}.t{i}", "F32", (i + 1, 7), _raw("F32", (i + 1, 7))) for i in range(5)]
        fname = f"model-{s + 1:05d}-of-{n:05d}.safetensors"
        st_writer.write(str(d / fname), entries)
        wmap.update({e[0]: fname for e in entries})
        want.update({e[0]: e[3] for e in entries})
    if index:
        (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
    return d, want, wmap


@pytest.mark.parametrize("opts", [{}, {"max_device_bytes": 0}, {"inflight": 1}])
def test_checkpoint_directory_index_and_iterator(tmp_path, opts):
    d, want, _ = _sharded(tmp_path)
    for target in (d, d / "model.safetensors.index.json"):
        out = us.load_checkpoint(target, **opts)
        assert {k: _bytes_of(v) for k, v in out.items()} == want
    seen = list(us.iter_checkpoint(d, **opts))
    assert {k: _bytes_of(v) for k, v in seen} == want and len(seen) == len(want)
    np_out = us.load_checkpoint(d, framework="np")
    assert {k: v.tobytes() for k, v in np_out.items()} == want


def test_checkpoint_without_index_uses_every_file(tmp_path):
    d, want, _ = _sharded(tmp_path, index=False)
    assert {k: _bytes_of(v) for k, v in us.load_checkpoint(d).items()} == want


def test_missing_shard_names_file_and_tensor(tmp_path):
    d, _, wmap = _sharded(tmp_path)
    os.unlink(d / "model-00002-of-00003.safetensors")
    with pytest.raises(us.SafetensorError, match="model-00002-of-00003.*missing"):
        us.load_checkpoint(d)
    with pytest.raises(us.SafetensorError, match="model-00002"):
        us.iter_checkpoint(d)


def test_index_naming_an_absent_tensor(tmp_path):
    d, _, wmap = _sharded(tmp_path)
    wmap["ghost"] = "model-00001-of-00003.safetensors"
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
    with pytest.raises(us.SafetensorError, match="ghost"):
        us.load_checkpoint(d)


def test_index_with_tensors_swapped_between_shards(tmp_path):
    d, _, wmap = _sharded(tmp_path)
    wmap["s0.t1"], wmap["s2.t3"] = wmap["s2.t3"], wmap["s0.t1"]
    (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
    for call in (us.load_checkpoint, us.iter_checkpoint):
        with pytest.raises(us.SafetensorError) as err:
            call(d)
        msg = str(err.value)
        assert "'s0.t1'" in msg and "model-00003-of-00003" in msg, msg
        assert "model-00001-of-00003" in msg, msg


def test_index_is_read_once(tmp_path, monkeypatch):
    import builtins
    d, want, _ = _sharded(tmp_path)
    index, opened = str(d / "model.safetensors.index.json"), []
    for module in (os, builtins):   # either way of opening it counts
        real = module.open
        monkeypatch.setattr(module, "open",
                            lambda f, *a, real=real, **k: opened.append(f) or real(f, *a, **k))
    assert len(us.load_checkpoint(d)) == len(want)
    assert opened.count(index) == 1


def test_load_reports_its_phase_times(tmp_path):
    d, want, _ = _sharded(tmp_path)
    times = {"stale": 1.0}
    assert len(us.load_checkpoint(d, times=times)) == len(want)
    assert set(times) == {"open", "alloc+submit", "first file ready", "all ready"}
    assert 0 <= times["open"] <= times["alloc+submit"] <= times["all ready"]


def test_bad_shard_in_a_checkpoint_returns_nothing(tmp_path):
    d, _, _ = _sharded(tmp_path)
    (d / "model-00003-of-00003.safetensors").write_bytes(bad_files.CASES["malformed JSON"][0])
    with pytest.raises(us.SafetensorError, match="model-00003"):
        us.load_checkpoint(d)


@pytest.mark.parametrize("case", sorted(bad_files.CASES))
@pytest.mark.parametrize("framework", ["pt", "np"])
def test_bad_input_table(tmp_path, case, framework):
    data, words = bad_files.CASES[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(us.SafetensorError) as err:
        us.load(str(path), framework=framework)
    assert str(path) in str(err.value) and words in str(err.value)
    with pytest.raises(us.SafetensorError):
        us.safe_open(str(path), framework=framework)


def test_file_truncated_after_its_header_was_read(tmp_path, monkeypatch):
    path = tmp_path / "t.safetensors"
    path.write_bytes(st_writer.encode([("w", "F32", (1024,), b"\x01" * 4096)]))
    real = us._format.read_header

    def shrink(p):
        h = real(p)
        os.truncate(p, os.path.getsize(p) - 100)
        return h
    monkeypatch.setattr(us, "read_header", shrink)
    for opts in ({}, {"max_device_bytes": 1}):
        path.write_bytes(st_writer.encode([("w", "F32", (1024,), b"\x01" * 4096)]))
        with pytest.raises(us.SafetensorError, match="truncated"):
            us.load_file(str(path), **opts)


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        us.load_file(str(tmp_path / "absent.safetensors"))
    path = st_writer.write(str(tmp_path / "g.safetensors"), [("w", "U8", (1,), b"\x01")])
    with pytest.raises(ValueError):
        us.safe_open(path, framework="tf")
    with pytest.raises(ValueError):
        us.load_file(path, device="tpu")
    with pytest.raises(ValueError):
        us.load(path, framework="np", device="cuda:0")


def _tiny(tmp_path):
    return st_writer.write(str(tmp_path / "t.safetensors"), [("w", "U8", (2,), b"\x01\x02")])


def test_cuda_without_usable_cuda_says_why(tmp_path, monkeypatch):
    path = _tiny(tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    why = r"needs CUDA, but torch \S+ (was built without CUDA|sees no usable CUDA device)"
    for dev in ("cuda", "cuda:0", 0, torch.device("cuda")):
        with pytest.raises(ValueError, match=why):
            us.load_file(path, device=dev)
    with pytest.raises(ValueError, match=why):
        us.safe_open(path, framework="pt", device="cuda")
    with pytest.raises(ValueError, match=why):
        us.load_checkpoint(str(tmp_path), device="cuda:0")


def test_cuda_index_past_the_devices(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match=r"'cuda:2': torch sees 2 CUDA devices \(cuda:0 to"):
        us.load_file(_tiny(tmp_path), device="cuda:2")
    with pytest.raises(ValueError, match="unsupported device -1"):
        us.load_file(_tiny(tmp_path), device=-1)


def test_a_directory_given_as_a_file_is_named(tmp_path):
    _tiny(tmp_path)
    for load in (us.load_file, lambda p: us.safe_open(p, framework="pt")):
        with pytest.raises(IsADirectoryError) as err:
            load(tmp_path)
        assert err.value.filename == str(tmp_path) and str(tmp_path) in str(err.value)
        assert "load_checkpoint" in str(err.value)


def test_a_fifo_or_device_is_refused_not_waited_on(tmp_path):
    """Opening a FIFO waits for a writer: one given as a file, named as a shard
    or as the index, or found among a directory's files is refused at once,
    naming what it is; so is a character device."""
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    is_fifo = "pipe.safetensors is a FIFO, not a regular file"
    with deadline(30):
        for load in (us.load_file, lambda p: us.safe_open(p, framework="pt"),
                     us.load_checkpoint, lambda p: us.load(p, framework="np")):
            with pytest.raises(us.SafetensorError, match=is_fifo):
                load(str(fifo))
        with pytest.raises(us.SafetensorError, match="is a character device"):
            us.load_file(os.devnull)
        d, _, wmap = _sharded(tmp_path)
        wmap["s0.t0"] = str(fifo)
        (d / "model.safetensors.index.json").write_text(json.dumps({"weight_map": wmap}))
        with pytest.raises(us.SafetensorError, match=r"pipe.safetensors \(tensor 's0.t0'\) "
                                                     r"is not a regular file"):
            us.load_checkpoint(d)
        os.unlink(d / "model.safetensors.index.json")
        os.mkfifo(d / "model.safetensors.index.json")
        with pytest.raises(us.SafetensorError, match="index.json is a FIFO"):
            us.load_checkpoint(d)
        os.unlink(d / "model.safetensors.index.json")
        os.mkfifo(d / "model-00009-of-00009.safetensors")
        with pytest.raises(us.SafetensorError, match="00009.safetensors is a FIFO"):
            us.load_checkpoint(d)


@pytest.mark.parametrize("name", ["pt", "torch", "pytorch", "np", "numpy"])
def test_framework_names_of_the_safetensors_package(tmp_path, name):
    got = us.load(_tiny(tmp_path), framework=name)["w"]
    assert isinstance(got, torch.Tensor if name in ("pt", "torch", "pytorch") else np.ndarray)
    assert bytes(got.tolist()) == b"\x01\x02"


@pytest.mark.parametrize("name", ["tf", "tensorflow", "jax", "flax", "mlx", "paddle"])
def test_other_frameworks_are_refused_by_name(tmp_path, name):
    known = r" \(a framework of the safetensors package that ufile does not load\)"
    match = f"unsupported framework '{name}'{known if name != 'paddle' else ''}; " \
            "torch: pt, torch, pytorch; numpy: np, numpy"
    with pytest.raises(ValueError, match=match):
        us.load(_tiny(tmp_path), framework=name)
