# SPDX-License-Identifier: Apache-2.0
"""The user documentation's GPU examples run as written (doc_examples.py), on
the GPU machine: PYTHON.md's opening example on a checkpoint and a file of the
names it uses, DISTRIBUTED.md's NCCL load with torchrun on every GPU. Each
block has a deadline; the whole process group it starts is killed at it."""
from __future__ import annotations

import os

import numpy as np
import pytest

import dist_cases as dc
import doc_examples as de
import st_writer


def _python_md_files(work: str) -> None:
    """What PYTHON.md's opening example opens: a checkpoint folder and a file
    with a q_proj of 2048 rows or more."""
    dc.write_checkpoint(os.path.join(work, "Llama-3-8B"))
    q = np.arange(4096 * 8, dtype=np.float16).reshape(4096, 8)
    st_writer.write(os.path.join(work, "model.safetensors"),
                    [("model.layers.0.self_attn.q_proj.weight", "F16", q.shape, q.tobytes())],
                    {"format": "pt"})


FIXTURES = {"docs/PYTHON.md": _python_md_files}


@pytest.mark.parametrize("doc", [d for d in de.DOCS
                                 if any(b.kind == "gpu" for b in de.blocks(d))])
def test_gpu_examples_run_as_written(doc, tmp_path):
    import torch
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} sees no CUDA device")
    FIXTURES.get(doc, lambda work: None)(str(tmp_path))
    done = de.run(doc, "gpu", str(tmp_path), deadline=600)
    print("\n".join(done))
    assert any("ran" in line for line in done), f"{doc}: no GPU block ran"
