# SPDX-License-Identifier: Apache-2.0
"""The user documentation's examples run as written (doc_examples.py): every
program block is marked with the test that runs it, and the CPU ones run here,
each with a deadline, their printed lines checked against the doc's; on the
documented setup (Debian 12's python3, numpy and torch 1.13), that is
DISTRIBUTED.md's collective load on 3 gloo processes."""
from __future__ import annotations

import pytest

import doc_examples as de


@pytest.mark.parametrize("doc", de.DOCS)
def test_every_example_is_marked_with_the_test_that_runs_it(doc):
    bad = de.problems(doc)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("doc", [d for d in de.DOCS
                                 if any(b.kind == "cpu" for b in de.blocks(d))])
def test_cpu_examples_run_as_written(doc, tmp_path):
    done = de.run(doc, "cpu", str(tmp_path))
    print("\n".join(done))
    assert any("ran" in line for line in done), f"{doc}: no CPU block ran"


def test_the_collective_example_runs_on_3_processes_and_its_output_is_checked():
    dist = de.blocks("docs/DISTRIBUTED.md")
    commands = [b for b in dist if b.kind == "cpu" and b.lang == "sh"]
    assert any("load_gloo.py tiny-llama 3" in b.text for b in commands), commands
    assert sum(b.kind == "output" for b in dist) >= 1


def test_a_marker_missing_or_a_drifted_output_fails(tmp_path, monkeypatch):
    doc = tmp_path / "doc.md"
    doc.write_text("```sh\necho unmarked\n```\n\n<!-- doc-test: cpu -->\n```sh\necho one\n"
                   "```\n\n<!-- doc-test: output -->\n```text\ntwo\n```\n")
    monkeypatch.setattr(de, "ROOT", str(tmp_path))
    assert [p.split(":")[1] for p in de.problems("doc.md")] == ["1"]
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(AssertionError, match="prints\none\nbut the doc shows\ntwo"):
        de.run("doc.md", "cpu", str(work))
