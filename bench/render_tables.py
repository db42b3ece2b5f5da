#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Renders the JSON lines of bench/run_compare.sh as the Markdown tables of
docs/BENCHMARKS.md, figures exactly as measured: one table per command, a
--compare run starting at its pinned-copy row; nvidia rows that failed are
left out (the page says so once).
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


def runs(rows):
    out = []
    for r in rows:
        if r["type"] == "pinned-copy" or not out:
            out.append([])
        out[-1].append(r)
    return out


def setting(r):
    if r["type"] == "ufile":
        return "the naive row's thread count" if "naive" in r["setting"] else "one caller"
    s = r["setting"]
    for cut in (", no file", ", O_DIRECT", "O_DIRECT, "):
        s = s.replace(cut, "")
    return s


def cells(r, random):
    if r["error"]:
        return None
    if r["verified"] is False:
        raise SystemExit(f"{r['type']} row not verified: refusing to render it")
    common = f"{fmt(r['cpu_s_per_gb'], 3)} | {fmt(r['ratio'], 3)} | {setting(r)}"
    if random:
        return (f"{r['type']} | {r['iops']:,.0f} | {fmt(r['gbps_min'])} - {fmt(r['gbps_max'])}"
                f" | {fmt(r['p50_us'], 1)} | {fmt(r['p99_us'], 1)} | {common}")
    return f"{r['type']} | {fmt(r['gbps'])} | {fmt(r['gbps_min'])} - {fmt(r['gbps_max'])} | {common}"


def render(rows):
    random = any(r["p50_us"] is not None for r in rows)
    if random:
        print("| row | IOPS | GB/s min - max | p50 us | p99 us | CPU s/GB | ratio | setting |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("| request | row | GB/s | min - max | CPU s/GB | ratio | setting |")
        print("|---|---|---|---|---|---|---|")
    for run in runs(rows):
        u = next((r for r in run if r["type"] == "ufile"), run[0])
        first = True
        for r in run:
            line = cells(r, random)
            if line is None:
                continue
            if not random:
                line = (f"**{size(u['io_size'])}** | " if first else " | ") + line
                first = False
            print(f"| {line} |")
    print()


def main():
    out_dir = sys.argv[1]
    for name in sys.argv[2:]:
        with open(f"{out_dir}/{name}.jsonl") as f:
            render([json.loads(line) for line in f if line.strip()])


if __name__ == "__main__":
    main()
