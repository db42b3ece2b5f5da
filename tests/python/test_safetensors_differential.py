# SPDX-License-Identifier: Apache-2.0
"""ufile.safetensors beside the safetensors package, file by file: the table
of edge files (st_cases) and a seeded corpus (st_corpus: valid files from its
own writer and mutations), each loaded by both with load_file and safe_open in
worker processes with a deadline. Both must load the same tensors (names,
dtypes, shapes, bytes, metadata) or both refuse, ufile with SafetensorError
naming the file; the differences docs/PYTHON.md lists are allowed.

UFILE_FUZZ_SEED (default 1) and UFILE_DIFF_COUNT (default 1500) pick the
corpus; a failure names the seed and the file's index to rebuild it with
st_corpus.make(seed, i)."""
from __future__ import annotations

import concurrent.futures as futures
import os

import pytest
import torch

import st_cases
import st_compare
import st_corpus

pytest.importorskip("safetensors")

SEED = int(os.environ.get("UFILE_FUZZ_SEED", "1"))
COUNT = int(os.environ.get("UFILE_DIFF_COUNT", "1500"))
CHUNK, DEADLINE_S = 250, 300
SUB_BYTE = ("'F4'", "'F6_E2M3'", "'F6_E3M2'")
FNUZ = {"F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz"}


def _outcomes(files: list, tmp) -> tuple[dict, list]:
    """{(loader, path): row} for both loaders over files, and the problems
    (a worker that died or passed its deadline, and the file it was on)."""
    jobs, rows, problems = [], {}, []
    with futures.ThreadPoolExecutor(max(2, min(8, (os.cpu_count() or 2) // 2))) as pool:
        for loader in ("ufile", "package"):
            for i in range(0, len(files), CHUNK):
                out = str(tmp / f"{loader}-{i}.jsonl")
                jobs.append((loader, pool.submit(st_compare.run, loader,
                                                 files[i:i + CHUNK], out, DEADLINE_S)))
        for loader, job in jobs:
            got, problem = job.result()
            rows.update({(loader, r["file"]): r for r in got})
            if problem:
                problems.append(problem)
    return rows, problems


def _verdict(outcome: dict) -> str:
    return "load" if "ok" in outcome else "refuse"


def _allowed(ours: dict, theirs: dict) -> bool:
    """A difference docs/PYTHON.md states."""
    msg = ours.get("msg", "")
    if "ok" in theirs:  # names given twice, sub-byte dtypes: refused by ufile
        return "duplicate key in the header" in msg or any(d in msg for d in SUB_BYTE)
    # a shape torch cannot hold: torch's own error from the package
    return "cannot make a tensor of shape" in msg and theirs["error"] != "SafetensorError"


def _compare(ours: dict, theirs: dict) -> str | None:
    """None where the outcomes agree, else what differs."""
    if "error" in ours and (ours["error"] != "SafetensorError" or not ours["named"]):
        return f"ufile raised {ours['error']} (named={ours['named']}): {ours['msg']}"
    if "ok" in ours and "ok" in theirs:
        return None if ours["ok"] == theirs["ok"] else \
            f"different tensors: ufile {str(ours['ok'])[:300]} package {str(theirs['ok'])[:300]}"
    if _verdict(ours) == _verdict(theirs) or _allowed(ours, theirs):
        return None
    return (f"ufile {_verdict(ours)} ({ours.get('msg', '')[:200]}), package "
            f"{_verdict(theirs)} ({theirs.get('error', '')}: {theirs.get('msg', '')[:200]})")


def test_edge_table_matches_the_package(tmp_path):
    files = {}
    for i, (name, (data, _, _)) in enumerate(sorted(st_cases.CASES.items())):
        path = tmp_path / f"case{i}.safetensors"
        path.write_bytes(data)
        files[str(path)] = name
    rows, problems = _outcomes(sorted(files), tmp_path)
    assert not problems, problems
    wrong = []
    for path, name in sorted(files.items(), key=lambda kv: kv[1]):
        _, package, ufile = st_cases.CASES[name]
        if not hasattr(torch, FNUZ.get(name, "float32")):
            package = ufile = None  # this torch lacks the dtype: both refuse it
        for call in ("load_file", "safe_open"):
            ours, theirs = rows[("ufile", path)][call], rows[("package", path)][call]
            if package is not None and _verdict(theirs) != package:
                wrong.append(f"{name} {call}: package: {_verdict(theirs)}, table: {package} "
                             f"({theirs.get('msg', '')[:200]})")
            if ufile is not None and _verdict(ours) != ufile:
                wrong.append(f"{name} {call}: ufile: {_verdict(ours)}, table: {ufile} "
                             f"({ours.get('msg', '')})")
            diff = _compare(ours, theirs)
            if diff:
                wrong.append(f"{name} {call}: {diff}")
    assert not wrong, "\n".join(wrong)


def test_seeded_corpus_beside_the_package(tmp_path):
    corpus = st_corpus.write(str(tmp_path / "corpus"), SEED, 0, COUNT)
    rows, problems = _outcomes([p for p, _ in corpus], tmp_path)
    assert not problems, f"seed {SEED}: {problems}"
    diffs, counts = [], {"load": 0, "refuse": 0}
    for i, (path, what) in enumerate(corpus):
        counts[_verdict(rows[("package", path)]["load_file"])] += 1
        for call in ("load_file", "safe_open"):
            diff = _compare(rows[("ufile", path)][call], rows[("package", path)][call])
            if diff:
                diffs.append(f"seed {SEED} file {i} ({what}) {call}: {diff}")
    print(f"seed {SEED}: {COUNT} files, the package loads {counts['load']} and refuses "
          f"{counts['refuse']}; {len(diffs)} differences")
    assert counts["load"] and counts["refuse"]
    assert not diffs, f"{len(diffs)} differences:\n" + "\n".join(diffs[:40])
