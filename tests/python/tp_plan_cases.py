# SPDX-License-Identifier: Apache-2.0
"""The rank worker of the tp_plan test (torch 2.x, transformers, NCCL): a
LlamaForCausalLM that transformers laid out tensor-parallel from its own
``tp_plan`` is zeroed, then filled in place by ufile's load_into; its logits
must equal those of transformers' own load, with no parameter moved and no
second copy of the weights in device memory."""
from __future__ import annotations

import glob
import os

BOUND = 1 << 20   # max_device_bytes of the load: far below the model's own bytes


def write_model(path: str) -> None:
    """A small random Llama (float32, about 13 MiB) saved by transformers."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(5)
    config = LlamaConfig(vocab_size=4096, hidden_size=256, intermediate_size=512,
                         num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=4,
                         tie_word_embeddings=False)
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(path)


def _shapes(path: str) -> dict:
    from ufile import safetensors as us
    out = {}
    for f in glob.glob(os.path.join(path, "*.safetensors")):
        with us.safe_open(f, framework="pt") as fh:
            for k in fh.keys():
                out[k] = tuple(fh.get_slice(k).get_shape())
    return out


def _target(p, full: tuple, rank: int, n: int):
    """A DTensor as it is (load_into reads its placements); a plain local
    shard as (destination, None, its slice of the checkpoint tensor)."""
    if hasattr(p, "to_local"):
        return p
    if tuple(p.shape) == full:
        return p
    dims = [d for d, (a, b) in enumerate(zip(p.shape, full)) if a != b]
    if len(dims) != 1 or full[dims[0]] != p.shape[dims[0]] * n:
        raise AssertionError(f"a local shard {tuple(p.shape)} of {full} this test cannot place")
    d, size = dims[0], p.shape[dims[0]]
    src = tuple(slice(rank * size, (rank + 1) * size) if i == d else slice(None)
                for i in range(len(full)))
    return [(p, None, src)]


def tp_plan_worker(rank: int, n: int, path: str) -> dict:
    import torch
    import torch.distributed as dist
    from transformers import LlamaForCausalLM
    from ufile import safetensors as us

    def local(t):
        return t.to_local() if hasattr(t, "to_local") else t
    # What torchrun would set: transformers' tensor-parallel set-up reads them.
    os.environ.update(LOCAL_RANK=str(rank), RANK=str(rank), WORLD_SIZE=str(n),
                      LOCAL_WORLD_SIZE=str(n))
    device = torch.device("cuda", torch.cuda.current_device())
    ids = (torch.arange(16, device=device).reshape(1, 16) * 7) % 4096
    model = LlamaForCausalLM.from_pretrained(path, tp_plan="auto", dtype=torch.float32).eval()
    left = [k for k, t in list(model.named_parameters()) + list(model.named_buffers())
            if local(t).device != device]
    if left:   # what transformers left elsewhere: moved before anything is measured
        model.to(device)
    with torch.no_grad():
        ref = model(ids).logits.float()
        params = {k: p.data for k, p in model.named_parameters()}
        for p in params.values():
            local(p).zero_()
    shapes = _shapes(path)
    targets = {k: _target(p, shapes[k], rank, n) for k, p in params.items()}
    pointers = {k: local(p).data_ptr() for k, p in params.items()}
    own = sum(local(p).numel() * local(p).element_size() for p in params.values())
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    loaded = us.load_into(path, targets, group=dist.group.WORLD, max_device_bytes=BOUND)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    with torch.no_grad():
        got = model(ids).logits.float()
    return {"equal": got.shape == ref.shape and torch.equal(got.view(torch.int32),
                                                            ref.view(torch.int32)),
            "moved": [k for k, p in params.items() if local(p).data_ptr() != pointers[k]],
            "missing": sorted(set(params) - set(loaded)), "peak": peak, "own": own,
            "dtensors": sum(hasattr(p, "to_local") for p in params.values()),
            "left_off_gpu": left[:8]}
