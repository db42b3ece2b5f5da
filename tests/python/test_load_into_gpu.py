# SPDX-License-Identifier: Apache-2.0
"""load_into on CUDA: a checkpoint the safetensors package wrote, loaded into
CUDA tensors that exist, byte-equal to ``safetensors.torch.load_file``'s and
without new tensors (the bytes land in the targets); fused, padded and cast
targets on one GPU; the tensor-parallel load over NCCL on 2 GPUs, each byte
read once across the group, a bad target on one rank making every rank
raise, a rank with no targets taking part; a transformers model laid out from
its tp_plan filled in place (logits equal to transformers' own load)."""
from __future__ import annotations

import os

import pytest
import torch

import dist_harness
import load_into_cases as lc
from fs_support import module_dir
from ufile import safetensors as us
from ufile.safetensors import _frameworks

if torch.cuda.device_count() < 2:  # run_pytest.py --gpus 2 skips first
    raise RuntimeError(f"needs 2 GPUs, torch sees {torch.cuda.device_count()}")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    with module_dir(tmp_path_factory, "intogpu") as path:
        yield path


@pytest.fixture(scope="module")
def package_file(root):
    """Tensors of every common dtype and a 64 MiB one, saved by the package."""
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(3)
    tensors = {"bf16": torch.randn(1031, 257, generator=g).to(torch.bfloat16),
               "f32": torch.randn(64 << 18, generator=g),
               "f16": torch.randn(3, 5, 7, generator=g).half(),
               "i64": torch.randint(-9, 9, (17,), generator=g), "scalar": torch.tensor(2.5),
               "empty": torch.empty(0, 4)}
    path = os.path.join(root, "package.safetensors")
    save_file(tensors, path)
    return path


def test_byte_equal_to_the_package_and_in_place(package_file, monkeypatch):
    from safetensors.torch import load_file
    want = load_file(package_file, device="cuda")
    targets = {k: torch.full_like(v, 7) if v.numel() else torch.empty_like(v)
               for k, v in want.items()}
    pointers = {k: t.data_ptr() for k, t in targets.items()}
    made: list = []
    real = _frameworks.Torch.empty
    monkeypatch.setattr(_frameworks.Torch, "empty",
                        lambda self, info, *a, **k: made.append(info.name) or
                        real(self, info, *a, **k))
    assert sorted(us.load_into(package_file, targets)) == sorted(want)
    torch.cuda.synchronize()
    for k, v in want.items():
        assert targets[k].data_ptr() == pointers[k], k
        assert torch.equal(targets[k].view(-1).view(torch.uint8) if v.numel() else targets[k],
                           v.view(-1).view(torch.uint8) if v.numel() else v), k
    assert made == []


@pytest.mark.parametrize("n", [1, 2])
def test_fused_padded_cast_on_one_gpu(root, n):
    path = os.path.join(root, "llama")
    arrays = lc.write(path)
    for rank in range(n):
        params = lc.model(torch, rank, n, "cuda")
        us.load_into(path, lc.targets(params, rank, n), rename=lc.rename, cast=True)
        torch.cuda.synchronize()
        assert lc.differences(params, lc.expected(arrays, rank, n)) == []


def test_tensor_parallel_over_nccl(root):
    path = os.path.join(root, "llama-tp")
    arrays = lc.write(path)
    res = dist_harness.run(lc.tp_worker, 2, (path, arrays, "cuda", None), backend="nccl",
                           deadline=300)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        assert r["ok"]["differ"] == [] and r["ok"]["moved"] == [], (rank, r["ok"])
    wanted = sum(a.nbytes for k, a in arrays.items() if not k.endswith("inv_freq"))
    assert sum(r["ok"]["read"] for r in res) == wanted


def test_a_bad_target_on_one_rank_over_nccl(root):
    path = os.path.join(root, "llama-bad")
    arrays = lc.write(path)
    res = dist_harness.run(lc.tp_worker, 2, (path, arrays, "cuda", "bad_shape"),
                           backend="nccl", deadline=300)
    for rank, r in enumerate(res):
        assert r.get("type") == "DistributedLoadError", (rank, r)
        assert "rank 1" in r["error"], r["error"]


def test_a_rank_with_no_targets_over_nccl(root):
    """A rank whose part is empty (an empty DCP plan) still takes part on its
    GPU; the other rank's parameters are loaded."""
    path = os.path.join(root, "llama-empty")
    arrays = lc.write(path)
    res = dist_harness.run(lc.tp_worker, 2, (path, arrays, "cuda", "no_targets"),
                           backend="nccl", deadline=300)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
    assert res[0]["ok"]["differ"] == [] and res[1]["ok"]["loaded"] == [], res[1]


def test_a_transformers_model_filled_in_place_from_its_tp_plan(root):
    """transformers lays the model out from its tp_plan; load_into fills its
    parameters in place: logits equal transformers' own load, nothing moved,
    and the load's extra device memory stays within its bound, far below a
    second copy of the rank's weights."""
    pytest.importorskip("transformers")
    import tp_plan_cases
    path = os.path.join(root, "tiny-llama")
    tp_plan_cases.write_model(path)
    res = dist_harness.run(tp_plan_cases.tp_plan_worker, 2, (path,), backend="nccl",
                           deadline=300)
    for rank, r in enumerate(res):
        assert "ok" in r, f"rank {rank}: {r.get('trace', r)}"
        got = r["ok"]
        print(f"rank {rank}: {got['dtensors']} DTensor parameters, extra peak {got['peak']} B "
              f"for {got['own']} B of its own weights; left off the GPU by transformers: "
              f"{got['left_off_gpu']}")
        assert got["equal"] and got["moved"] == [] and got["missing"] == [], (rank, got)
        assert got["peak"] <= tp_plan_cases.BOUND + (2 << 20) < got["own"], (rank, got)
