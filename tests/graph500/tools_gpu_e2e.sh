#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The GPU modes of graph500-bfs on a scale-14 graph, under deadlines: every
# tree of gpu-mem, gpu-devio and gpu-hostio valid, the device-initiated and
# host-driven modes reading the lists from the file. Exit 77 (skipped)
# without an NVIDIA GPU.
#   tools_gpu_e2e.sh GEN BFS TMPDIR
set -u
gen=$1 bfs=$2
if [ ! -e /dev/nvidia0 ] && ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "skipped: no NVIDIA GPU"
  exit 77
fi
dir=$(mktemp -d "$3/g500gpu.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# A field of a mode's block in $out: field MODE NAME.
field() { echo "$out" | awk -v m="$1" -v k="$2:" '$1 == "mode:" {c = $2} c == m && $1 == k {print $2}'; }

timeout 60 "$gen" -s 14 -o "$dir/g.g500" || fail "graph500-gen exit $?"
out=$(timeout 300 "$bfs" -f "$dir/g.g500" -m host,gpu-mem,gpu-devio,gpu-hostio -n 16 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "graph500-bfs exit $rc"
[ "$(echo "$out" | grep -c "^validation: *passed (16 of 16 trees")" -eq 4 ] ||
  fail "not 4 validated modes"
[ "$(field gpu-devio bytes_read)" -gt 0 ] 2>/dev/null || fail "gpu-devio read nothing"
[ "$(field gpu-hostio reads)" -gt 0 ] 2>/dev/null || fail "gpu-hostio read nothing"
# The same roots give the same components: the modes' edge counts agree.
n=$(echo "$out" | grep -E '^bfs_mean_nedge:' | awk '{print $2}' | sort -u | wc -l)
[ "$n" -eq 1 ] || fail "the modes disagree on the edges traversed"
echo "PASS"
