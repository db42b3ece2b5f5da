# SPDX-License-Identifier: Apache-2.0
"""A ``shard`` mapping whose pattern decides no tensor of the checkpoint (it
matches none, or only tensors an earlier pattern takes) is an error naming the
pattern, alone and collectively (every rank raises, before any read); the
patterns shard_from_tp_plan makes may match nothing."""
from __future__ import annotations

import os
import re

import pytest

import dist_cases as dc
import dist_harness
from fs_support import module_dir
from ufile.safetensors import SafetensorError, shard_from_tp_plan
from ufile.safetensors._dist_rules import split_dims
from ufile.safetensors._format import read_header

DEADLINE = 120


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    with module_dir(tmp_path_factory, "rules") as root:
        path = os.path.join(root, "ckpt")
        dc.write_checkpoint(path)
        yield path


def _headers(path: str) -> list:
    return [read_header(os.path.join(path, f)) for f in sorted(os.listdir(path))
            if f.endswith(".safetensors")]


def test_every_pattern_used_is_accepted(ckpt):
    dims = split_dims(_headers(ckpt), dc.SHARD_RULES)
    assert dims["layers.0.q.weight"] == 0 and dims["layers.0.norm"] is None


@pytest.mark.parametrize("rules,words", [
    ({r"\.q\.weight$": 0, r"\.q_prj\.weight$": 1},
     r"pattern '\\\\.q_prj\\\\.weight\$' matches no tensor of the checkpoint \(14 tensors "
     r"in 4 files"),
    ({r"weight$": 0, r"\.o\.weight$": 1},
     r"pattern '\\\\.o\\\\.weight\$' matches only tensors an earlier pattern takes \(such "
     r"as 'layers\.0\.o\.weight'\)"),
    ({r"nothing": 0, r"^cube$": 1, r"neither": 0},
     r"'nothing' matches no tensor; pattern 'neither' matches no tensor"),
    ({re.compile(r"q_prj"): 0}, r"pattern 'q_prj' matches no tensor"),
])
def test_a_pattern_that_decides_no_tensor_is_named(ckpt, rules, words):
    with pytest.raises(SafetensorError, match=words):
        split_dims(_headers(ckpt), rules)


def test_callables_are_not_checked(ckpt):
    dims = split_dims(_headers(ckpt), lambda name, shape: None)
    assert set(dims.values()) == {None}


def test_tp_plan_patterns_may_match_nothing_but_added_ones_may_not(ckpt):
    shard = shard_from_tp_plan({"layers.*.q": "colwise", "layers.*.o": "rowwise",
                                "lm_head": "colwise_rep", "absent.*.proj": "colwise"})
    dims = split_dims(_headers(ckpt), shard)  # no biases, no absent.N.proj: accepted
    assert dims["layers.0.q.weight"] == 0 and dims["layers.0.o.weight"] == 1
    shard[r"^embd"] = 0
    with pytest.raises(SafetensorError, match=r"pattern '\^embd' matches no tensor"):
        split_dims(_headers(ckpt), shard)


def _mistyped_worker(rank, n, path):
    import torch.distributed as dist
    from ufile import safetensors as us
    with dc.recorded_reads() as reads:
        try:
            us.load_checkpoint(path, group=dist.group.WORLD, shard={r"\.q\.weight$": 0,
                                                                     r"\.o_prj\.weight$": 1})
        finally:
            assert not reads, f"rank {rank} read {len(reads)} pieces before the error"
    return "loaded"


def test_a_mistyped_pattern_makes_every_rank_raise_before_any_read(ckpt):
    res = dist_harness.run(_mistyped_worker, 3, (ckpt,), deadline=DEADLINE, pg_timeout=30)
    for rank, r in enumerate(res):
        assert r.get("type") == "DistributedLoadError", (rank, r)
        assert "pattern '\\\\.o_prj\\\\.weight$' matches no tensor" in r["error"], (rank, r)
