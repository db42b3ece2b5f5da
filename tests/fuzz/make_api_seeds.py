#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed inputs of api_fuzzer to corpus/api/ (run it again after a
change to the input format of api_ops.cpp / api_batch.cpp; this file mirrors
their decoding). Each seed is a short, meaningful scenario; libFuzzer mutates
from there. Usage: tests/fuzz/make_api_seeds.py"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "api")

# Step opcodes (api_ops.cpp, Sequence::Step: U8() % 22).
OPEN, CLOSE, SET_MAX_DIRECT, REGISTER, DEREGISTER, BUF_REG, BUF_DEREG = 0, 1, 2, 3, 5, 6, 7
READ, WRITE, FILL, CHECK_FILE = 8, 11, 14, 15
B_SETUP, B_SUBMIT, B_STATUS, B_CANCEL, B_DESTROY = 16, 17, 19, 20, 21
RDWR, RDONLY, WRONLY, RDWR_DIRECT, RDONLY_DIRECT, WRONLY_DIRECT, APPEND, DIRECTORY = range(8)


def u8(v):
    return bytes([v & 0xFF])


def u16(v):
    return struct.pack("<H", v & 0xFFFF)


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def knobs(direct_kb=0, threshold=0, threads=1, parallel=0, batch=2, uring=1, split=1):
    """Indices into the tables of api_fuzzer.cpp DecodeKnobs."""
    a = direct_kb + 5 * threshold + 20 * (threads - 1)
    b = parallel + 4 * batch + 12 * uring + 24 * (1 - split)
    return u8(a) + u8(b)


def handle(slot=0, null=False):
    return u8(7) if null else u8(slot)  # PickHandle: 0..3 a slot, 7 NULL


def base(buf=0, misalign=0):
    """PickBase: buffer `buf` at kMisalign[misalign] (0, 1, 512, 4095)."""
    for c in range(256):
        if c % 8 < 5 and (c >> 3) % 3 == buf and (c >> 5) % 4 == misalign:
            return u8(c)
    raise ValueError


def size(n):
    if n == 0:
        return u8(0)
    if n % 4096 == 0 and n <= 65536:
        return u8(3) + u8(n // 4096 - 1)
    assert 1 <= n <= 32768
    return u8(7) + u16(n - 1)


def file_off(off):
    if off == 0:
        return u8(0)
    if off == -1:
        return u8(4) + u8(0)
    if off % 4096 == 0:
        return u8(1) + u8(off // 4096)
    return u8(2) + u32(off)


def buf_off(off):
    if off == 0:
        return u8(0)
    if off < 4096:
        return u8(2) + u16(off)
    return u8(4) + u32(off)


def io(slot, buf, n, off, boff=0, misalign=0):
    return handle(slot) + base(buf, misalign) + size(n) + file_off(off) + buf_off(boff)


def register(kind):
    return u8(REGISTER) + u8(kind)


def read(*args, **kw):
    return u8(READ) + io(*args, **kw)


def write(*args, **kw):
    return u8(WRITE) + io(*args, **kw)


def batch_setup(nr):
    return u8(B_SETUP) + u8(0x09) + u8(nr - 1)  # c % 8 == 1, (c >> 3) % 8 == 1


def batch_submit(slot, entries):
    out = u8(B_SUBMIT) + u8(0x20) + u8(slot) + u8(len(entries))
    for is_write, args in entries:
        out += u8(1 if is_write else 0) + u8(0x02) + io(*args)
    return out


def batch_status(slot, max_nr, min_nr, blocking=True):
    return (u8(B_STATUS) + u8(0x20) + u8(slot) + u8(max_nr - 1) + u8(min_nr) +
            u8(0 if blocking else 2))


SEEDS = {
    "write_read_back": knobs() + register(RDWR) + write(0, 0, 8192, 4096) +
    read(0, 1, 8192, 4096) + u8(CHECK_FILE),
    "odirect_unaligned": knobs(direct_kb=0, threshold=0, threads=2) + register(RDWR_DIRECT) +
    write(0, 0, 10000, 4097, 3, misalign=1) + read(0, 2, 12345, 4000, 0, misalign=3) +
    register(RDONLY) + read(1, 1, 30000, 250000),
    "read_past_end": knobs(uring=0, split=0) + register(RDONLY) + read(0, 0, 8192, 260000) +
    read(0, 1, 100, 300000),
    "access_modes": knobs() + register(RDONLY) + register(WRONLY) + write(0, 0, 100, 0) +
    read(1, 0, 100, 0) + write(1, 2, 4096, 8192) + u8(DEREGISTER) + handle(1) +
    write(1, 2, 4096, 8192),
    "refused_registrations": knobs() + register(APPEND) + register(DIRECTORY) + u8(REGISTER) +
    u8(8) + u8(REGISTER) + u8(9) + register(RDWR) + u8(REGISTER) + u8(10) + u8(CLOSE) +
    u8(CLOSE) + read(0, 0, 10, 0),
    "bad_arguments": knobs() + register(RDWR) + u8(READ) + handle(0) + base(0) + size(10) +
    file_off(-1) + buf_off(0) + u8(WRITE) + handle(null=True) + base(0) + size(10) +
    file_off(0) + buf_off(0) + u8(READ) + handle(0) + base(0) + u8(5) + u8(0) + u8(0) +
    u8(6) + u8(0),
    "registered_buffers": knobs() + u8(BUF_REG) + u8(0) + u8(1) + u8(0) + base(0) +
    u8(BUF_REG) + u8(0) + u8(0) + u8(0) + base(0) + register(RDWR) +
    read(0, 0, 8192, 0, 0) + u8(BUF_DEREG) + u8(1) + base(0) + u8(BUF_DEREG) + u8(1) + base(0),
    "batch_round_trip": knobs(direct_kb=1, threshold=0, threads=2) + register(RDWR) +
    batch_setup(4) + batch_submit(0, [(True, (0, 0, 8192, 65536)),
                                      (False, (0, 1, 4096, 0)),
                                      (True, (0, 2, 100, 300000))]) +
    batch_status(0, 8, 3) + batch_submit(0, [(False, (0, 1, 8192, 65536))]) +
    u8(B_CANCEL) + u8(0) + batch_status(0, 4, 1) + u8(B_DESTROY) + u8(0),
    "batch_then_close": knobs() + u8(OPEN) + register(RDWR_DIRECT) + batch_setup(2) +
    batch_submit(0, [(True, (0, 0, 16384, 0)), (True, (0, 1, 5000, 20000))]) + u8(CLOSE) +
    batch_submit(0, [(False, (0, 1, 10, 0))]) + batch_status(0, 2, 0, blocking=False) +
    batch_status(0, 2, 2) + u8(B_DESTROY) + u8(0),
    "nested_opens_and_chunks": knobs(direct_kb=0, threshold=0, threads=3, parallel=2) +
    u8(OPEN) + u8(OPEN) + u8(SET_MAX_DIRECT) + u8(2) + register(RDWR) +
    write(0, 0, 65536, 12288, 0, misalign=1) + u8(CLOSE) + read(0, 1, 65536, 12288) +
    u8(CLOSE) + u8(CLOSE),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")


if __name__ == "__main__":
    main()
