# SPDX-License-Identifier: Apache-2.0
"""A collective load plan carried out in numpy over made-up files (no process
group): every rank's parts, and how many times each file byte was read."""
from __future__ import annotations

import math

import numpy as np

from ufile.safetensors._dist_plan import Broadcast
from ufile.safetensors._format import DTYPES, Header, TensorInfo

NP = {"F32": np.float32, "F16": np.float16, "U8": np.uint8, "I64": np.int64, "BF16": np.uint16}


def headers(files: list) -> tuple:
    """files: list of [(name, dtype, shape)]; returns headers and file bytes."""
    rng = np.random.default_rng(3)
    headers, blobs = [], []
    for fi, entries in enumerate(files):
        data_start, pos, tensors = 64 + 8 * fi, 0, {}
        for name, dtype, shape in entries:
            n = math.prod(shape) * DTYPES[dtype][0]
            tensors[name] = TensorInfo(name, dtype, tuple(shape), pos, pos + n)
            pos += n
        blob = rng.integers(0, 256, data_start + pos, dtype=np.uint8)
        headers.append(Header(f"f{fi}", data_start, data_start + pos, None, tensors))
        blobs.append(blob)
    return headers, blobs


def execute(plan, headers, blobs) -> tuple:
    """Carries the plan out in numpy; returns per-rank {name: array} and the
    number of times each file byte was read."""
    n = plan.ranks
    reads = [np.zeros(len(b), np.int32) for b in blobs]
    out = [{name: np.zeros(p.shape, NP[p.dtype]) for name, p in plan.parts[r].items()}
           for r in range(n)]

    def read(rd, rank: int) -> np.ndarray:
        assert plan.may_read(rank), f"rank {rank} reads but its host lacks the files"
        reads[rd.file][rd.offset:rd.offset + rd.size] += 1
        return blobs[rd.file][rd.offset:rd.offset + rd.size]

    def raw(r, name):
        return out[r][name].reshape(-1).view(np.uint8)
    for r in range(n):
        for rd in plan.direct[r]:
            raw(r, rd.dest)[rd.dest_offset:rd.dest_offset + rd.size] = read(rd, r)
    for op in plan.ops:
        if isinstance(op, Broadcast):
            assert op.hi - op.lo <= plan.chunk and op.read.size == op.hi - op.lo
            if op.root in op.ranks:
                assert op.read.dest == op.name
                assert op.read.dest_offset == op.lo == op.offset(op.root)
                raw(op.root, op.name)[op.lo:op.hi] = read(op.read, op.root)
                sent = raw(op.root, op.name)[op.lo:op.hi]
            else:   # staged: the root keeps none of it
                assert op.read.dest == "" and op.at, op
                sent = read(op.read, op.root).copy()
            for r in op.ranks:
                at = op.offset(r)
                raw(r, op.name)[at:at + op.hi - op.lo] = sent
            continue
        for j in range(n):   # rank j reads its rows; each receiver takes its columns
            first, count = op.rows[j]
            assert (op.reads[j] is None) == (count == 0)
            slab = read(op.reads[j], j).reshape(count, op.row_bytes) if count else \
                np.zeros((0, op.row_bytes), np.uint8)
            assert slab.nbytes <= max(plan.slab, op.row_bytes)
        for k in range(n):
            c0, cb = op.cols[k]
            got = []
            for j in range(n):
                a, b = op.sent_rows(j, k)
                first = op.rows[j][0]
                got.append(rows_of(blobs, op, j)[a - first:b - first, c0:c0 + cb])
            got = np.concatenate(got).reshape(-1)
            assert got.nbytes == op.recv_bytes(k) <= max(plan.recv, op.row_bytes)
            assert sum(op.sent_rows(j, k)[1] - op.sent_rows(j, k)[0]
                       for j in range(n)) * cb == got.nbytes
            if cb:
                raw(k, op.name).reshape(-1, cb)[op.part_rows(k)] = got.reshape(-1, cb)
    return out, reads


def rows_of(blobs, op, j) -> np.ndarray:
    first, count = op.rows[j]
    if not count:
        return np.zeros((0, op.row_bytes), np.uint8)
    rd = op.reads[j]
    return blobs[rd.file][rd.offset:rd.offset + rd.size].reshape(count, op.row_bytes)
