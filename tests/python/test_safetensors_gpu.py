# SPDX-License-Identifier: Apache-2.0
"""On a GPU, beside the safetensors package: every tensor of a sharded
checkpoint byte-for-byte equal (views and bounded mode, load and iterate),
slices, keys, metadata, and the same exception types."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

safetensors = pytest.importorskip("safetensors")
from safetensors import safe_open as st_open  # noqa: E402
from safetensors.torch import load_file as st_load, save_file  # noqa: E402

import st_writer  # noqa: E402
import ufile  # noqa: E402
from fs_support import make_dir, need_odirect, opened_direct, record_loader_files  # noqa: E402
from ufile import safetensors as us  # noqa: E402

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8,
          torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]
DTYPES += [getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32",
                                       "uint64") if hasattr(torch, n)]


def _random(shape, dtype, gen):
    n = 1
    for d in shape:
        n *= d
    size = n * torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (size,), dtype=torch.uint8, generator=gen)
    if dtype == torch.bool:
        return (raw % 2).view(torch.bool).reshape(shape)
    return raw.view(dtype).reshape(shape)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    d = make_dir(tmp_path_factory.mktemp("ckpt"))
    gen = torch.Generator().manual_seed(7)
    shapes = [(), (0,), (1,), (3, 5), (17, 33), (128, 96), (4, 3, 7), (1024, 513)]
    weight_map, shards = {}, 3
    for s in range(shards):
        tensors = {}
        for i, dt in enumerate(DTYPES):
            for j, shape in enumerate(shapes):
                if (i + j) % shards == s:
                    tensors[f"layer.{i}.{j}.w"] = _random(shape, dt, gen)
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        save_file(tensors, str(d / fname), metadata={"format": "pt", "shard": str(s)})
        weight_map.update({k: fname for k in tensors})
    with open(d / "model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    ref = {}
    for fname in sorted(set(weight_map.values())):
        ref.update(st_load(str(d / fname), device="cuda"))
    yield d, ref
    shutil.rmtree(d, ignore_errors=True)


def same(a, b):
    return (a.dtype == b.dtype and a.shape == b.shape and a.device == b.device and
            torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)))


@pytest.mark.parametrize("opts", [{}, {"max_device_bytes": 1 << 30},
                                  {"direct": True, "request_bytes": 4096, "inflight": 3},
                                  {"request_bytes": 1 << 20}, {"request_bytes": 0},
                                  {"direct": False, "register_buffers": True}])
def test_checkpoint_equals_safetensors(ckpt, opts, monkeypatch):
    d, ref = ckpt
    if opts.get("direct"):
        need_odirect(d)
    opened = record_loader_files(monkeypatch)
    out = us.load_checkpoint(d, device="cuda", **opts)
    if opts.get("direct"):
        assert [(f.direct, fd_direct) for f, fd_direct in opened] == [(True, True)] * 3
    assert sorted(out) == sorted(ref)
    assert all(same(out[k], ref[k]) for k in ref)
    seen = dict(us.iter_checkpoint(str(d / "model.safetensors.index.json"), device=0, **opts))
    assert sorted(seen) == sorted(ref) and all(same(seen[k], ref[k]) for k in ref)


def test_load_file_keys_metadata_and_tensors(ckpt):
    d, _ = ckpt
    path = str(d / "model-00002-of-00003.safetensors")
    ours, theirs = us.load_file(path, device="cuda:0"), st_load(path, device="cuda:0")
    assert list(ours) == list(theirs)
    assert all(same(ours[k], theirs[k]) for k in theirs)
    with us.safe_open(path, "pt", device="cuda") as a, st_open(path, "pt", device="cuda") as b:
        assert a.keys() == list(b.keys())
        if hasattr(b, "offset_keys"):
            assert a.offset_keys() == list(b.offset_keys())
        assert a.metadata() == b.metadata()
        for k in b.keys():
            assert same(a.get_tensor(k), b.get_tensor(k))


@pytest.mark.parametrize("index", [slice(2, 9), slice(None, 1), slice(None), slice(-3, None),
                                   (slice(None), slice(5, 20)), (slice(100, 300), slice(1, 4))])
def test_slices_equal_safetensors(tmp_path, index):
    gen = torch.Generator().manual_seed(3)
    t = _random((1024, 513), torch.bfloat16, gen)
    path = str(tmp_path / "s.safetensors")
    save_file({"w": t, "b": _random((7,), torch.int8, gen)}, path)
    with us.safe_open(path, "pt", device="cuda") as a, st_open(path, "pt", device="cuda") as b:
        ours, theirs = a.get_slice("w")[index], b.get_slice("w")[index]
        assert same(ours.contiguous(), theirs.contiguous())
        assert a.get_slice("w").get_shape() == b.get_slice("w").get_shape()
        assert a.get_slice("w").get_dtype() == b.get_slice("w").get_dtype()


def test_unaligned_offsets_copied_and_equal(tmp_path):
    # An odd-sized u8 tensor first puts the f32 tensor at an offset of 3 mod 4.
    gen = torch.Generator().manual_seed(5)
    f32 = _random((33, 7), torch.float32, gen)
    raw = f32.reshape(-1).view(torch.uint8).numpy().tobytes()
    path = st_writer.write(str(tmp_path / "u.safetensors"),
                           [("a", "U8", (3,), b"\x01\x02\x03"), ("b", "F32", (33, 7), raw)],
                           align=1)
    ours = us.load_file(path, device="cuda")
    assert same(ours["b"], f32.cuda()) and ours["a"].tolist() == [1, 2, 3]
    theirs = st_load(path, device="cuda")
    assert same(ours["b"], theirs["b"])


def test_same_exception_types(ckpt, tmp_path):
    d, _ = ckpt
    path = str(d / "model-00001-of-00003.safetensors")
    for opener in (us.safe_open, st_open):
        with opener(path, "pt", device="cuda") as f:
            with pytest.raises(safetensors.SafetensorError):
                f.get_tensor("no.such.tensor")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(st_writer.raw_file(b"[1, 2]", b""))
    for loader in (us.load_file, st_load):
        with pytest.raises(safetensors.SafetensorError):
            loader(str(bad), device="cuda")
    for loader in (us.load_file, st_load):
        with pytest.raises(FileNotFoundError):
            loader(str(tmp_path / "absent.safetensors"), device="cuda")


@pytest.mark.parametrize("kind", ["torch", "cai", "dlpack"])
def test_file_round_trip_device_buffers(io_dir, kind):
    src = torch.randint(0, 256, (3 << 20,), dtype=torch.uint8, device="cuda")
    dst = torch.zeros_like(src)

    class Wrap:
        def __init__(self, t):
            if kind == "cai":
                self.__cuda_array_interface__ = t.__cuda_array_interface__
            else:
                self.__dlpack__ = t.__dlpack__
                self.__dlpack_device__ = t.__dlpack_device__
    wrap = (lambda t: t) if kind == "torch" else Wrap
    path = str(io_dir / "f.bin")
    need_odirect(io_dir)
    with ufile.File(path, "w") as f:
        assert f.write_from(wrap(src)) == src.numel()
    with ufile.File(path, "r", direct=True) as f:
        assert f.direct is True and opened_direct(f)
        assert f.read_into_async(wrap(dst), size=1 << 20, file_offset=4097,
                                 buf_offset=5).result() == 1 << 20
        assert f.read_into(wrap(dst), size=4096, buf_offset=2 << 20) == 4096
    torch.cuda.synchronize()
    assert torch.equal(dst[5:5 + (1 << 20)], src[4097:4097 + (1 << 20)])
    assert torch.equal(dst[2 << 20:(2 << 20) + 4096], src[:4096])


import bad_files  # noqa: E402


@pytest.mark.parametrize("case", sorted(bad_files.CASES))
def test_bad_files_raise_what_safetensors_raises(tmp_path, case):
    data, _ = bad_files.CASES[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    try:
        st_load(str(path), device="cuda")
        theirs = None
    except Exception as exc:  # noqa: BLE001 - recording what they raise
        theirs = type(exc)
    print(f"{case}: safetensors raises {theirs}")
    with pytest.raises(Exception) as ours:
        us.load_file(str(path), device="cuda")
    if theirs is not None:
        assert isinstance(ours.value, theirs), f"{case}: ours {type(ours.value)}, theirs {theirs}"
