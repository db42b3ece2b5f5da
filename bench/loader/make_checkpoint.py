# SPDX-License-Identifier: Apache-2.0
"""Writes a Llama-shaped sharded safetensors checkpoint of random bf16 data, with
the parameter names and shapes of transformers' LlamaForCausalLM, a config.json
and a model.safetensors.index.json, so that from_pretrained loads the same
directory. "full" is Llama-3-8B (291 tensors, 16.06 GB), "70b" Llama-3-70B (about 141 GB),
"30b" a 30B-class Llama (about 65 GB); "small" is CI-sized."""
from __future__ import annotations

import json
import os
import sys

import torch

SIZES = {
    "full": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=8, vocab_size=128256),
    "70b": dict(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                num_attention_heads=64, num_key_value_heads=8, vocab_size=128256),
    "30b": dict(hidden_size=6656, intermediate_size=17920, num_hidden_layers=64,
                num_attention_heads=52, num_key_value_heads=4, vocab_size=128256),
    "small": dict(hidden_size=1024, intermediate_size=3584, num_hidden_layers=4,
                  num_attention_heads=16, num_key_value_heads=4, vocab_size=32000),
}


SHARDS = {"70b": 30, "30b": 14}  # about 4.7 GB a file, as published checkpoints


def config_for(size: str):
    from transformers import LlamaConfig
    return LlamaConfig(**SIZES[size], max_position_embeddings=8192, rope_theta=500000.0,
                       tie_word_embeddings=False, dtype="bfloat16")


def param_shapes(config) -> list[tuple[str, tuple]]:
    from transformers import LlamaForCausalLM
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    return [(n, tuple(p.shape)) for n, p in model.state_dict().items()]


def write(dirname: str, size: str, shards: int = 4, seed: int = 1234) -> dict:
    from safetensors.torch import save_file
    os.makedirs(dirname, exist_ok=True)
    config = config_for(size)
    config.save_pretrained(dirname)
    shapes = param_shapes(config)
    total = sum(2 * _numel(s) for _, s in shapes)
    per_shard, groups, cur, acc = total / shards, [], [], 0
    for name, shape in shapes:
        cur.append((name, shape))
        acc += 2 * _numel(shape)
        if acc >= per_shard * (len(groups) + 1) and len(groups) < shards - 1:
            groups.append(cur)
            cur = []
    groups.append(cur)
    gen = torch.Generator(device="cuda").manual_seed(seed)
    weight_map = {}
    for i, group in enumerate(groups):
        fname = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        tensors = {}
        for name, shape in group:
            bits = torch.randint(-32768, 32768, shape, dtype=torch.int16, device="cuda",
                                 generator=gen)
            tensors[name] = bits.view(torch.bfloat16).cpu()
            weight_map[name] = fname
        save_file(tensors, os.path.join(dirname, fname), metadata={"format": "pt"})
        del tensors
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(dirname, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    return {"tensors": len(shapes), "bytes": total, "shards": len(groups)}


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


if __name__ == "__main__":
    print(write(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "small"))
