#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Renders the JSON lines of bench/run_compare.sh as Markdown tables for
docs/BENCHMARKS.md: one table per --compare run (a run starts at its
pinned-copy row), figures exactly as measured.
    bench/render_tables.py OUT_DIR hot-read randread-1t ...
"""
import json
import sys


def size(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def tables(rows):
    out, cur = [], []
    for r in rows:
        if r["type"] == "pinned-copy" and cur:
            out.append(cur)
            cur = []
        cur.append(r)
    if cur:
        out.append(cur)
    return out


def render(name, rows):
    for t in tables(rows):
        u = next(r for r in t if r["type"] == "ufile")
        odirect = ", O_DIRECT" if u["odirect"] else ""
        print(f"**{name}: {u['op']} {size(u['io_size'])}, {u['threads']} thread(s), {u['cache']}"
              f"{odirect}** ({u['date']}, median of {u['repeats']}; ceiling: {u['ceiling']})\n")
        print("| row | GB/s | min - max | IOPS | p50 us | p99 us | CPU s/GB | ratio | verified | setting |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in t:
            if r["error"]:
                print(f"| {r['type']} | failed | | | | | | | | {r['error']} |")
                continue
            ver = {True: "yes", False: "NO", None: "n/a"}[r["verified"]]
            print(f"| {r['type']} | {fmt(r['gbps'])} | {fmt(r['gbps_min'])} - {fmt(r['gbps_max'])}"
                  f" | {fmt(r['iops'], 0)} | {fmt(r['p50_us'], 1)} | {fmt(r['p99_us'], 1)}"
                  f" | {fmt(r['cpu_s_per_gb'], 3)} | {fmt(r['ratio'], 3)} | {ver} | {r['setting']} |")
        print()


def main():
    out_dir = sys.argv[1]
    for name in sys.argv[2:]:
        with open(f"{out_dir}/{name}.jsonl") as f:
            render(name, [json.loads(line) for line in f if line.strip()])


if __name__ == "__main__":
    main()
