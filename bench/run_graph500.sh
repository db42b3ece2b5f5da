#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Graph500 rows of docs/BENCHMARKS.md in one command, on one GPU machine:
#   bench/run_graph500.sh BUILD_DIR DATA_DIR [SCALE]     (SCALE default 27)
# Writes DATA_DIR/gSCALE.g500 when missing. Then, each line one graph500-bfs
# process (every mode of it on the same roots, an untimed warm-up search
# first), with --gpu-memory-limit LIMIT (default 8G: below the column
# indices of scale 27, 17.2 GB, so gpu-mem cannot run and says so):
#   hot:   MODES, ROOTS roots (default 64), VALIDATE trees validated a mode
#          (default all)
#   cold:  COLD_MODES, the file's pages dropped before each search,
#          COLD_ROOTS roots (default 4)
# MODES default gpu-devio,gpu-hostio,gpu-zerocopy,host-do,gpu-mem;
# COLD_MODES gpu-devio,gpu-hostio (the CPU search over a cold mapped file
# waits on a page fault a list; COLD_MODES= runs no cold step). Each step
# is under timeout(1) with output line-buffered, so a step cut short keeps
# what it printed; the script goes on after a failed step and exits 1.
# Time on one H200: scale 27, about 80 s to generate, 1.2 s a hot gpu-devio
# search (0.6 to 2.5 s across the modes), 12 s a cold one; scale 28, 170 s,
# 2.4 s (1.1 to 5.2 s), 24 to 34 s. A validation pass of the regenerated
# edge list takes about 40 s at scale 28, plus 1 to 5 s a tree; it holds 16
# trees at scale 28 with 128 GB of memory (more with --validate-memory).
set -uo pipefail
build=$1 data=$2 scale=${3:-27}
bfs=$build/examples/graph500/graph500-bfs gen=$build/examples/graph500/graph500-gen
modes=${MODES:-gpu-devio,gpu-hostio,gpu-zerocopy,host-do,gpu-mem}
cold_modes=${COLD_MODES-gpu-devio,gpu-hostio}  # set and empty: no cold step
roots=${ROOTS:-64} cold_roots=${COLD_ROOTS:-4} validate=${VALIDATE:-$roots}
limit=${LIMIT:-8G}
graph=$data/g$scale.g500
rc=0
step() {  # seconds-limit args...
  local seconds=$1 start=$SECONDS
  shift
  echo "\$ $*"
  timeout "$seconds" stdbuf -oL "$@" || { echo "exit $?"; rc=1; }
  echo "($((SECONDS - start)) s)"
}
mkdir -p "$data"
[ -f "$graph" ] || step 900 "$gen" -s "$scale" -o "$graph"
step 1800 "$bfs" -f "$graph" -m "$modes" -n "$roots" --validate "$validate" \
  --gpu-memory-limit "$limit"
if [ -n "$cold_modes" ]; then
  step 1800 "$bfs" -f "$graph" -m "$cold_modes" -n "$cold_roots" --validate 1 --cold \
    --gpu-memory-limit "$limit"
fi
exit $rc
