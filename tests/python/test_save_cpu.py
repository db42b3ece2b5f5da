# SPDX-License-Identifier: Apache-2.0
"""save_file / save: the byte vectors of the format's reference tests, the
package's layout rule, round trips through the loader, and the file-level
promises of save_file (mode, symbolic links, options, nothing left behind).
test_save_corpus_cpu.py compares with files the safetensors package wrote."""
from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
import torch

import save_cases
from ufile import safetensors as us

# Byte vectors of the format's reference tests (safetensors' tensor.rs).
VECTORS = [
    ({"attn.0": (torch.float32, [1, 2, 3])}, None,
     b'@\x00\x00\x00\x00\x00\x00\x00{"attn.0":{"dtype":"F32","shape":[1,2,3],'
     b'"data_offsets":[0,24]}}'),
    ({"attn0": (torch.float32, [1, 1, 2, 3])}, None,
     b'H\x00\x00\x00\x00\x00\x00\x00{"attn0":{"dtype":"F32","shape":[1,1,2,3],'
     b'"data_offsets":[0,24]}}       '),
    ({}, None, b"\x08\x00\x00\x00\x00\x00\x00\x00{}      "),
    ({}, {"framework": "pt"},
     b'(\x00\x00\x00\x00\x00\x00\x00{"__metadata__":{"framework":"pt"}}     '),
]


@pytest.mark.parametrize("spec,metadata,head", VECTORS)
def test_reference_vectors(spec, metadata, head):
    tensors = {k: torch.arange(6, dtype=dt).reshape(shape) for k, (dt, shape) in spec.items()}
    data = us.save(tensors, metadata=metadata)
    body = b"".join(t.numpy().tobytes() for t in tensors.values())
    assert data == head + body


def _split(data: bytes) -> tuple:
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), data[8 + n:], n


def test_layout_order_dtype_then_name():
    tensors = {"b": torch.zeros(1, dtype=torch.int8), "a": torch.zeros(1, dtype=torch.int8),
               "z": torch.zeros(1, dtype=torch.float64), "m": torch.zeros(1, dtype=torch.bool),
               "c": torch.zeros(1, dtype=torch.bfloat16), "d": torch.zeros(1, dtype=torch.float16)}
    header, _, _ = _split(us.save(tensors))
    assert list(header) == ["z", "c", "d", "a", "b", "m"]


def test_loads_back_exactly(io_dir):
    tensors, metadata = save_cases.build("pt_all_dtypes", torch)
    path = os.path.join(io_dir, "x.safetensors")
    us.save_file(tensors, path, metadata={"k": "v"})
    back = us.load_file(path)
    assert set(back) == set(tensors)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k].view(torch.uint8),
                                                        v.view(torch.uint8)), k
    with us.safe_open(path, "pt") as f:
        assert f.metadata() == {"k": "v"}


def test_replacing_keeps_the_mode_and_writes_through_a_link(io_dir):
    target = os.path.join(io_dir, "target.safetensors")
    link = os.path.join(io_dir, "link.safetensors")
    open(target, "wb").write(b"old")
    os.chmod(target, 0o600)
    os.symlink("target.safetensors", link)
    us.save_file({"w": torch.ones(3)}, link)
    assert os.path.islink(link), "the link was replaced instead of its target"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert torch.equal(us.load_file(link)["w"], torch.ones(3))
    assert sorted(os.listdir(io_dir)) == ["link.safetensors", "target.safetensors"]


def test_new_file_mode_follows_the_umask(io_dir):
    old = os.umask(0o027)
    try:
        path = os.path.join(io_dir, "m.safetensors")
        us.save_file({"w": torch.ones(1)}, path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_numpy_layouts_and_refusals(io_dir):
    from ufile.safetensors import numpy as un
    tensors, _ = save_cases.build("np_layouts", np)
    path = os.path.join(io_dir, "np.safetensors")
    un.save_file(tensors, path)
    assert open(path, "rb").read() == un.save(tensors)
    back = un.load_file(path)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype.newbyteorder("=") and np.array_equal(back[k], v), k
    with pytest.raises(us.SafetensorError, match="Unknown dtype \"complex128\""):
        un.save({"c": np.zeros(2, np.complex128)})


@pytest.mark.parametrize("direct", [False, True])
def test_large_tensors_in_pieces(io_dir, direct):
    gen = torch.Generator().manual_seed(3)
    tensors = {"big": torch.randint(0, 255, (3 * 65536 + 5,), dtype=torch.uint8, generator=gen),
               "f": torch.randn(1000, 33, generator=gen)}
    path = os.path.join(io_dir, "big.safetensors")
    us.save_file(tensors, path, direct=direct, request_bytes=65536, inflight=3)
    assert open(path, "rb").read() == us.save(tensors)


def test_directory_and_bad_options(io_dir):
    with pytest.raises(IsADirectoryError):
        us.save_file({"w": torch.ones(1)}, io_dir)
    with pytest.raises(ValueError, match="request_bytes"):
        us.save_file({"w": torch.ones(1)}, os.path.join(io_dir, "x"), request_bytes=10)
    with pytest.raises(TypeError, match="direct"):
        us.save_file({"w": torch.ones(1)}, os.path.join(io_dir, "x"), direct="auto")
    assert os.listdir(io_dir) == []


def test_missing_directory(io_dir):
    with pytest.raises(FileNotFoundError):
        us.save_file({"w": torch.ones(1)}, os.path.join(io_dir, "no", "x.safetensors"))


def test_reserved_name_refused(io_dir):
    """The package writes a tensor named __metadata__ into a file it cannot
    load; ufile refuses it."""
    with pytest.raises(us.SafetensorError, match="__metadata__"):
        us.save_file({"__metadata__": torch.ones(2)}, os.path.join(io_dir, "x.safetensors"))
    assert os.listdir(io_dir) == []
