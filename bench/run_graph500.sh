#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Graph500 rows of docs/BENCHMARKS.md in one command, on one GPU machine:
#   bench/run_graph500.sh BUILD_DIR DATA_DIR [SCALE]     (SCALE default 26)
# Writes DATA_DIR/gSCALE.g500 when missing (scale 26: 9.1 GB and about 2
# minutes on 16 cores; 27: 18.3 GB, about 4.5). Then, each line one
# graph500-bfs process (every mode of it on the same roots):
#   hot:        MODES, 8 roots, the first tree of each mode validated
#   hot, 2 SQPOLL threads:  gpu-devio and the host-driven modes
#   cold:       the file's pages dropped before each search, 4 roots
# MODES (default gpu-devio,gpu-hostio,file,host,gpu-mem) and ROOTS (8)
# override; a mode this build lacks is a usage error (exit 2). Each step is
# under timeout(1); the script goes on after a failed step and exits 1.
set -uo pipefail
build=$1 data=$2 scale=${3:-26}
bfs=$build/examples/graph500/graph500-bfs gen=$build/examples/graph500/graph500-gen
modes=${MODES:-gpu-devio,gpu-hostio,file,host,gpu-mem}
roots=${ROOTS:-8}
io_modes=$(echo "$modes" | tr , '\n' | grep -E '^(gpu-devio|gpu-hostio|file)$' | paste -sd, -)
graph=$data/g$scale.g500
rc=0
step() {  # seconds-limit args...
  local limit=$1 start=$SECONDS
  shift
  echo "\$ $*"
  timeout "$limit" "$@" || { echo "exit $?"; rc=1; }
  echo "($((SECONDS - start)) s)"
}
mkdir -p "$data"
[ -f "$graph" ] || step 900 "$gen" -s "$scale" -o "$graph"
step 1200 "$bfs" -f "$graph" -m "$modes" -n "$roots" --validate 1
if [ -n "$io_modes" ]; then
  case ",$io_modes," in *,gpu-devio,*) sq=(--sqthreads 2) ;; *) sq=() ;; esac
  if [ ${#sq[@]} -gt 0 ]; then
    step 1200 "$bfs" -f "$graph" -m "$io_modes" -n "$roots" --validate 1 "${sq[@]}"
  fi
  step 1200 "$bfs" -f "$graph" -m "$io_modes" -n 4 --validate 1 --cold
fi
exit $rc
