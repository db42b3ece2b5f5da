# SPDX-License-Identifier: Apache-2.0
"""The header parser against the safetensors package's rules (st_cases: what
the package accepts and refuses), runs ending in empty tensors, and a seeded
fuzz: every file loads or raises SafetensorError naming it, in a worker
process with a deadline (a crash or a hang fails the test)."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import st_cases
import st_compare
import st_corpus
import st_writer
from ufile import safetensors as us

def _write(tmp_path, data: bytes, name="f.safetensors") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _torch_has(dtype: str) -> bool:
    return getattr(torch, us.DTYPES[dtype][1], None) is not None


@pytest.mark.parametrize("case", sorted(st_cases.CASES))
def test_package_rules(tmp_path, case):
    data, _, verdict = st_cases.CASES[case]
    path = _write(tmp_path, data)
    if verdict == "refuse":
        for call in (us.load_file, lambda p: us.safe_open(p, framework="pt")):
            with pytest.raises(us.SafetensorError) as err:
                call(path)
            assert path in str(err.value)
        return
    with us.safe_open(path, framework="pt") as f:
        names = f.keys()
        missing = [n for n in names if not _torch_has(f.get_slice(n).get_dtype())]
        if missing:  # a dtype this torch lacks: refused by name, before any read
            with pytest.raises(us.SafetensorError, match="torch"):
                f.get_tensor(missing[0])
            return
        got = {n: f.get_tensor(n) for n in names}
    for opts in ({}, {"request_bytes": 4096}, {"max_device_bytes": 0}, {"request_bytes": 0}):
        out = us.load_file(path, **opts)
        assert sorted(out) == names
        for n, t in out.items():
            assert t.dtype == got[n].dtype and t.shape == got[n].shape
            assert t.numel() == 0 or torch.equal(t, got[n])


def test_metadata_key_twice_keeps_the_last(tmp_path):
    path = _write(tmp_path, st_cases.CASES["metadata key twice"][0])
    with us.safe_open(path) as f:
        assert f.metadata() == {"k": "2"}


def test_entry_as_an_array_means_dtype_shape_offsets(tmp_path):
    path = _write(tmp_path, st_cases.CASES["entry as an array"][0])
    t = us.load_file(path)["w"]
    assert t.dtype == torch.uint8 and tuple(t.shape) == (8, 5)
    assert t.reshape(-1).tolist() == list(range(40))


@pytest.mark.parametrize("request_bytes", [None, 4096, 0])
def test_run_ending_in_an_empty_tensor(tmp_path, request_bytes):
    opts = {} if request_bytes is None else {"request_bytes": request_bytes}
    out = us.load_file(_write(tmp_path, st_cases.RUN_END), **opts)
    assert out["a"].tolist() == [1, 2, 3] and tuple(out["z"].shape) == (0,)
    def entry(dtype, shape, begin, end):
        return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
    header = {"a": entry("F32", [3], 0, 12), "z": entry("U8", [0], 0, 0),
              "d": entry("I64", [2], 12, 28), "e": entry("U8", [0, 4], 12, 12)}
    data = np.ones(3, np.float32).tobytes() + np.arange(2).tobytes()
    path = _write(tmp_path, st_writer.raw_file(header, data), "e.safetensors")
    out = us.load_file(path, **opts)
    assert out["a"].tolist() == [1.0] * 3 and out["d"].tolist() == [0, 1]


def test_empty_tensor_beyond_torch_is_a_safetensor_error(tmp_path):
    path = _write(tmp_path, st_cases.one(shape=f"[0, {(1 << 64) - 1}]", offsets="[0, 0]",
                                          data=b""))
    for opts in ({}, {"max_device_bytes": 0}):
        with pytest.raises(us.SafetensorError, match="tensor 'w'.*shape") as err:
            us.load_file(path, **opts)
        assert path in str(err.value)
    with us.safe_open(path, framework="np") as f, pytest.raises(us.SafetensorError):
        f.get_tensor("w")


def test_seeded_fuzz_loads_or_raises_safetensor_error(tmp_path):
    """Files from st_corpus (valid ones and mutations), loaded by ufile with
    load_file and safe_open in a worker; any other exception, a crash or a
    hang fails."""
    seed = int(os.environ.get("UFILE_FUZZ_SEED", "7"))
    corpus = st_corpus.write(str(tmp_path / "c"), seed, 0, 400)
    rows, problem = st_compare.run("ufile", [p for p, _ in corpus],
                                   str(tmp_path / "out.jsonl"), 240)
    assert problem is None, f"seed {seed}: {problem}"
    what = dict(corpus)
    bad = [(what[r["file"]], k, r[k]) for r in rows for k in ("load_file", "safe_open")
           if "error" in r[k] and (r[k]["error"] != "SafetensorError" or not r[k]["named"])]
    assert not bad, f"seed {seed}: outside the contract: {bad[:5]}"
    loaded = sum("ok" in r["load_file"] for r in rows)
    assert 0 < loaded < len(rows)  # the corpus holds both kinds
