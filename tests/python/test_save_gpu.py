# SPDX-License-Identifier: Apache-2.0
"""Saving on the GPU machine, beside the safetensors package, huggingface_hub
and transformers: every corpus case saved from CUDA tensors is byte-identical
to the package's file (and to the committed corpus); the package's refusals
match live; save_checkpoint's shards are huggingface_hub's save_torch_state_dict
files byte for byte and its index the same document; from_pretrained loads a
ufile checkpoint; O_DIRECT and blocking=False from CUDA tensors; and the
Llama-3-8B-shaped checkpoint (16 GB) saved from the GPU and loaded back with
load_checkpoint, every byte compared; the collective save of CUDA tensors
over gloo, 2 and 3 processes on this one GPU (the NCCL suite is
test_save_dist_gpu.py)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys

import pytest
import torch

import dist_harness
import save_cases
import save_dist_cases
from ufile.safetensors import load_checkpoint, save, save_checkpoint, save_file

st = pytest.importorskip("safetensors.torch")
HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "testdata", "save")


def _cuda(tensors):
    return {k: v.to("cuda") for k, v in tensors.items()}


def _header_split(data: bytes):
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), data[8 + n:]


@pytest.mark.parametrize("name", sorted(k for k, (fw, _) in save_cases.CASES.items()
                                        if fw == "pt"))
def test_cuda_tensors_give_the_package_bytes(io_dir, name):
    try:
        tensors, metadata = save_cases.build(name, torch)
    except save_cases.Unavailable as exc:
        pytest.skip(f"skipped, because {exc}")
    theirs_path = os.path.join(io_dir, "theirs.safetensors")
    try:
        st.save_file(tensors, theirs_path, metadata=metadata)
    except Exception as exc:  # noqa: BLE001 - the package refuses it: so must we
        with pytest.raises(type(exc)):
            save_file(_cuda(tensors), os.path.join(io_dir, "mine.safetensors"),
                      metadata=metadata)
        return
    theirs = open(theirs_path, "rb").read()
    for direct in (False, True):
        mine_path = os.path.join(io_dir, f"mine-{direct}.safetensors")
        save_file(_cuda(tensors), mine_path, metadata=metadata, direct=direct)
        mine = open(mine_path, "rb").read()
        if name in save_cases.UNORDERED_METADATA:
            assert _header_split(mine) == _header_split(theirs)
        else:
            assert mine == theirs
    assert save(_cuda(tensors), metadata=metadata) == open(
        os.path.join(io_dir, "mine-False.safetensors"), "rb").read()
    manifest = os.path.join(CORPUS, "manifest.json")
    if os.path.exists(manifest) and name not in save_cases.UNORDERED_METADATA:
        rec = json.load(open(manifest))["cases"].get(name, {})
        if "sha256" in rec:
            assert hashlib.sha256(theirs).hexdigest() == rec["sha256"]


def _norm(message: str) -> str:
    """A message with its set literals' elements sorted (set order varies)."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", ")))
                  + "}", message)


@pytest.mark.parametrize("name", sorted(k for k, (fw, _) in save_cases.REFUSALS.items()
                                        if fw == "pt"))
def test_refusals_match_the_package(io_dir, name):
    tensors, metadata = save_cases.build(name, torch)
    try:
        st.save(tensors, metadata=metadata)
    except Exception as exc:  # noqa: BLE001 - what the package raises is the reference
        theirs = exc
    else:
        if name == "pt_meta_name_metadata":  # accepted by the package, refused by ufile
            with pytest.raises(Exception, match="__metadata__"):
                save(tensors, metadata=metadata)
            return
        pytest.fail(f"the package accepts {name}")
    with pytest.raises(Exception) as mine:
        save(tensors, metadata=metadata)
    assert type(mine.value).__name__ == type(theirs).__name__
    assert _norm(str(mine.value)) == _norm(str(theirs))


def _model_sd(device: str = "cuda") -> dict:
    g = torch.Generator(device=device).manual_seed(3)
    sd = {}
    for i in range(6):
        sd[f"model.layers.{i}.mlp.up_proj.weight"] = torch.randn(256, 64, generator=g,
                                                                 device=device)
        sd[f"model.layers.{i}.input_layernorm.weight"] = torch.randn(64, generator=g,
                                                                    device=device)
    sd["lm_head.weight"] = torch.randn(512, 64, generator=g, device=device).bfloat16()
    return sd


def test_shards_are_huggingface_hubs(io_dir):
    hub = pytest.importorskip("huggingface_hub")
    sd = _model_sd()
    mine, theirs = os.path.join(io_dir, "mine"), os.path.join(io_dir, "theirs")
    os.makedirs(theirs)  # huggingface_hub writes into an existing directory
    save_checkpoint(sd, mine, max_shard_size="200KB")
    hub.save_torch_state_dict({k: v.cpu() for k, v in sd.items()}, theirs,
                              max_shard_size="200KB")
    assert sorted(os.listdir(mine)) == sorted(os.listdir(theirs))
    for f in os.listdir(theirs):
        a, b = open(os.path.join(mine, f), "rb").read(), open(os.path.join(theirs, f), "rb").read()
        if f.endswith(".json"):
            assert json.loads(a) == json.loads(b), f
        else:
            assert a == b, f


def test_from_pretrained_loads_a_ufile_checkpoint(io_dir):
    transformers = pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "loader"))
    import make_checkpoint
    config = make_checkpoint.config_for("small")
    config.num_hidden_layers = 2
    model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    config.save_pretrained(io_dir)
    save_checkpoint(sd, io_dir, max_shard_size="20MB")
    back = transformers.LlamaForCausalLM.from_pretrained(io_dir, dtype=torch.bfloat16)
    got = back.state_dict()
    for k, v in sd.items():
        assert torch.equal(got[k].cuda(), v), k


@pytest.mark.parametrize("copy", [True, "device"])
def test_async_from_cuda(io_dir, copy):
    sd = _model_sd()
    want = {k: v.clone() for k, v in sd.items()}
    h = save_checkpoint(sd, io_dir, max_shard_size="200KB", blocking=False, copy=copy)
    for v in sd.values():
        v.add_(1)  # queued after the capture: not in the checkpoint
    h.wait()
    back = load_checkpoint(io_dir, device="cuda")
    for k, v in want.items():
        assert torch.equal(back[k], v), k


def test_async_staging_is_pinned_kept_and_reused(io_dir):
    """The capture's pinned region: registered with CUDA, kept after the
    save and reused by the next; a save beside one in flight gets its own;
    every checkpoint byte-exact; free_save_staging lets it go."""
    import threading
    from ufile.safetensors import _save_io, _save_staging, free_save_staging
    free_save_staging()
    sd = _model_sd()
    want = {k: v.clone() for k, v in sd.items()}
    d = [os.path.join(str(io_dir), x) for x in "abc"]
    save_checkpoint(sd, d[0], blocking=False).wait()
    kept = _save_staging._kept
    assert kept is not None and kept.tensor.is_pinned()
    assert kept.nbytes >= sum(v.numel() * v.element_size() for v in sd.values())

    gate = threading.Event()

    class Held(_save_io.SaveIO):
        def write(self, *args):
            gate.wait(60)
            return super().write(*args)
    _save_io.IO = Held()
    try:
        h1 = save_checkpoint(sd, d[1], blocking=False)   # in flight: holds the kept region
        h2 = save_checkpoint(sd, d[2], blocking=False)   # a region of its own
        gate.set()
        h1.wait()
        h2.wait()
    finally:
        gate.set()
        _save_io.IO = _save_io.SaveIO()
    assert _save_staging._kept is kept and kept.users == 0
    for path in d:
        back = load_checkpoint(path, device="cuda")
        for k, v in want.items():
            assert torch.equal(back[k], v), (path, k)
    free_save_staging()
    assert _save_staging.kept_bytes() == 0


def test_async_staging_falls_back_when_registering_fails(io_dir, monkeypatch):
    """CUDA refusing to pin the region: the save warns, copies into torch's
    pinned memory instead, and writes the same checkpoint; nothing is kept."""
    from ufile.safetensors import _save_staging, free_save_staging
    free_save_staging()

    def refuse(addr: int, size: int) -> None:
        raise OSError(12, "refused by the test")
    monkeypatch.setattr(_save_staging, "register", refuse)
    sd = _model_sd()
    want = {k: v.clone() for k, v in sd.items()}
    with pytest.warns(RuntimeWarning, match="pinned staging not registered"):
        h = save_checkpoint(sd, io_dir, max_shard_size="200KB", blocking=False)
    for v in sd.values():
        v.add_(1)  # after the capture: not in the checkpoint
    h.wait()
    assert _save_staging.kept_bytes() == 0
    back = load_checkpoint(io_dir, device="cuda")
    for k, v in want.items():
        assert torch.equal(back[k], v), k


def test_llama8b_round_trip(io_dir):
    """16 GB of bf16 tensors with Llama-3-8B's names and shapes, saved from
    the GPU (4 GB shards, O_DIRECT) and loaded back, every byte compared."""
    pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "loader"))
    import make_checkpoint
    shapes = make_checkpoint.param_shapes(make_checkpoint.config_for("full"))
    g = torch.Generator(device="cuda").manual_seed(8)
    sd = {n: torch.randint(-32768, 32767, s, generator=g, device="cuda",
                           dtype=torch.int16).view(torch.bfloat16) for n, s in shapes}
    save_checkpoint(sd, io_dir, max_shard_size="4GB", direct=True)
    back = load_checkpoint(io_dir, device="cuda")
    assert set(back) == set(sd)
    for k, v in sd.items():
        assert torch.equal(back[k].view(torch.int16), v.view(torch.int16)), k


@pytest.mark.parametrize("n", [2, 3])
def test_collective_save_of_cuda_tensors_over_gloo(io_dir, n):
    """Replicas and tensor-parallel parts in this GPU's memory, the ranks'
    gathers over gloo through host memory: byte for byte the checkpoint one
    process saves; a failing write on rank 1 raises on every rank."""
    root = str(io_dir)
    want = os.path.join(root, "expected")
    save_checkpoint(save_dist_cases.full(), want, max_shard_size=save_dist_cases.MAX_SHARD)
    results = dist_harness.run(save_dist_cases.cuda_worker, n,
                               (root, save_dist_cases.CUDA_SCENARIOS), backend="gloo",
                               deadline=300)
    save_dist_cases.check_cuda_saves(results, root, want)
