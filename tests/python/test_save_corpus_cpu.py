# SPDX-License-Identifier: Apache-2.0
"""save_file / save against files the safetensors package wrote: every case of
save_cases.CASES byte-identical to the package's file in
tests/python/testdata/save (written on the GPU machine by
save_make_corpus.py: safetensors 0.8, torch 2.x), and every input of
save_cases.REFUSALS refused with the package's exception type and message.
Cases needing a dtype this torch lacks (torch 1.13: U16, U32, U64, F8_*) skip
here, saying so; test_save_gpu.py runs them."""
from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np
import pytest
import torch

import save_cases
from ufile import safetensors as us
from ufile.safetensors import numpy as un
from ufile.safetensors import torch as ut

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "save")
with open(os.path.join(CORPUS, "manifest.json"), encoding="utf-8") as _f:
    MANIFEST = json.load(_f)


# Inputs the package accepts and ufile refuses, on purpose (docs/PYTHON.md, "Saving").
DIFFERENCES = {"pt_meta_name_metadata"}  # the package writes a file it cannot load
# numpy arrays that are not C-contiguous: the package (0.8) writes their memory as it
# lies, so its file loads as other values; ufile writes their values in C order.
RAW_MEMORY = {"np_layouts": ("transposed", "fortran", "strided")}


def _build(name: str):
    framework = (save_cases.CASES.get(name) or save_cases.REFUSALS[name])[0]
    fw, mod = (torch, ut) if framework == "pt" else (np, un)
    try:
        tensors, metadata = save_cases.build(name, fw)
    except save_cases.Unavailable as exc:
        pytest.skip(f"skipped, because {exc} (test_save_gpu.py compares this case)")
    return mod, tensors, metadata


def _split(data: bytes) -> tuple:
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), data[8 + n:], n


def _norm(message: str) -> str:
    """The message with its set literals' elements sorted (a set's order
    changes from process to process)."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", ")))
                  + "}", message)


def test_corpus_is_complete():
    assert set(MANIFEST["cases"]) == set(save_cases.CASES)
    assert set(MANIFEST["refusals"]) == set(save_cases.REFUSALS)
    for name, rec in MANIFEST["cases"].items():
        if "sha256" in rec and name not in save_cases.UNORDERED_METADATA:
            assert rec["save_equal"], f"{name}: the package's save() and file differ"
            assert rec.get("cuda_equal", True), f"{name}: the package's CUDA bytes differ"
            path = os.path.join(CORPUS, f"{name}.safetensors")
            assert hashlib.sha256(open(path, "rb").read()).hexdigest() == rec["sha256"], name


@pytest.mark.parametrize("name", sorted(save_cases.CASES))
def test_same_bytes_as_the_package(io_dir, name):
    rec = MANIFEST["cases"][name]
    if "sha256" not in rec:
        pytest.skip(f"skipped, because the package did not write it: {rec}")
    mod, tensors, metadata = _build(name)
    data = mod.save(tensors, metadata=metadata)
    path = os.path.join(io_dir, f"{name}.safetensors")
    mod.save_file(tensors, path, metadata=metadata)
    assert open(path, "rb").read() == data
    theirs = open(os.path.join(CORPUS, f"{name}.safetensors"), "rb").read()
    if name in save_cases.UNORDERED_METADATA:  # the package's metadata key order is random
        mine, ref = _split(data), _split(theirs)
        assert mine == ref and list(mine[0]) == list(ref[0])
    elif name in RAW_MEMORY:
        _raw_memory_case(tensors, data, theirs, RAW_MEMORY[name], path)
    else:
        assert data == theirs


def _raw_memory_case(tensors: dict, mine: bytes, theirs: bytes, raw: tuple, path: str) -> None:
    """The same header; the other tensors' bytes the same; the non-contiguous
    ones as the package writes them (their memory from the first element on) in
    its file, and as their values in ufile's, which loads back equal."""
    (hm, dm, _), (ht, dt, _) = _split(mine), _split(theirs)
    assert hm == ht and list(hm) == list(ht)
    for k, info in hm.items():
        b, e = info["data_offsets"]
        a = tensors[k]
        if k in raw:
            base = np.lib.stride_tricks.as_strided(a, shape=(a.size,),
                                                   strides=(a.itemsize,))
            assert dt[b:e] == base.tobytes(), f"{k}: the package no longer writes raw memory"
            assert dm[b:e] == np.ascontiguousarray(a).tobytes(), k
        else:
            assert dm[b:e] == dt[b:e], k
    back = un.load_file(path)
    for k, a in tensors.items():
        assert np.array_equal(back[k], a), k


@pytest.mark.parametrize("name", sorted(save_cases.REFUSALS))
def test_refusals_as_the_package(io_dir, name):
    rec = MANIFEST["refusals"][name]
    if "unavailable" in rec:
        pytest.skip(f"skipped, because {rec['unavailable']}")
    mod, tensors, metadata = _build(name)
    path = os.path.join(io_dir, "refused.safetensors")
    for call in ("save", "save_file"):
        want = rec[call]
        if want.get("accepted"):
            if name in DIFFERENCES:
                with pytest.raises(us.SafetensorError):
                    mod.save(tensors, metadata=metadata)
            else:
                assert mod.save(tensors, metadata=metadata)
            continue
        with pytest.raises(Exception) as got:
            if call == "save":
                mod.save(tensors, metadata=metadata)
            else:
                mod.save_file(tensors, path, metadata=metadata)
        assert type(got.value).__name__ == want["type"], (call, got.value)
        assert _norm(str(got.value)) == _norm(want["message"]), call
        assert not os.path.exists(path), "a refused save left a file"
