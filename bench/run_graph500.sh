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
# waits on a page fault a list). Each step is under timeout(1) with output
# line-buffered, so a step cut short keeps what it printed; the script goes
# on after a failed step and exits 1. Time on one H200 at scale 27: about
# 2 minutes to generate; hot, 1.2 seconds a gpu-devio search (1.2 to 2.3 a
# search across the modes at scale 26 x 2), plus a pass of the regenerated
# edge list per 48 trees validated; cold, about 12 seconds a search.
set -uo pipefail
build=$1 data=$2 scale=${3:-27}
bfs=$build/examples/graph500/graph500-bfs gen=$build/examples/graph500/graph500-gen
modes=${MODES:-gpu-devio,gpu-hostio,gpu-zerocopy,host-do,gpu-mem}
cold_modes=${COLD_MODES:-gpu-devio,gpu-hostio}
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
