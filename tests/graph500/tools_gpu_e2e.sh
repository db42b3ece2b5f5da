#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The GPU modes of graph500-bfs, under deadlines. Scale 14: every tree of
# host-do, gpu-mem, gpu-zerocopy, gpu-devio and gpu-hostio valid, the modes
# agreeing on the edges traversed, the file modes reading; --cold. Scale 20
# under --gpu-memory-limit 96M (the column indices alone are 128 MiB):
# gpu-mem says it cannot run, the others run and are valid; a limit no mode
# fits leaves every mode not run. Exit 77 (skipped) without an NVIDIA GPU.
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
modes=host-do,gpu-mem,gpu-zerocopy,gpu-devio,gpu-hostio

timeout 60 "$gen" -s 14 -o "$dir/g.g500" || fail "graph500-gen exit $?"
out=$(timeout 300 "$bfs" -f "$dir/g.g500" -m $modes -n 16 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "graph500-bfs exit $rc"
[ "$(echo "$out" | grep -c "^validation: *passed (16 of 16 trees")" -eq 5 ] ||
  fail "not 5 validated modes"
[ "$(field gpu-devio bytes_read)" -gt 0 ] 2>/dev/null || fail "gpu-devio read nothing"
[ "$(field gpu-hostio reads)" -gt 0 ] 2>/dev/null || fail "gpu-hostio read nothing"
# The same roots give the same components: the modes' edge counts agree.
n=$(echo "$out" | grep -E '^bfs_mean_nedge:' | awk '{print $2}' | sort -u | wc -l)
[ "$n" -eq 1 ] || fail "the modes disagree on the edges traversed"

out=$(timeout 120 "$bfs" -f "$dir/g.g500" -m gpu-devio,gpu-hostio,gpu-zerocopy -n 2 --cold 2>&1) ||
  fail "--cold: $out"
echo "$out" | grep -q '^mode: *gpu-devio (cold page cache)' || fail "--cold not reported"
echo "$out" | grep -q '^mode: *gpu-zerocopy .*--cold does not apply' || fail "zero-copy under --cold"

timeout 120 "$gen" -s 20 -o "$dir/g20.g500" || fail "graph500-gen -s 20 exit $?"
limit="--gpu-memory-limit 96M --queues 4 --depth 64 --hostio-buffer 1M -t 2"
out=$(timeout 300 "$bfs" -f "$dir/g20.g500" -m gpu-mem,gpu-zerocopy,gpu-devio,gpu-hostio -n 4 \
  $limit 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "under a memory limit: exit $rc"
echo "$out" | grep -q '^gpu-mem: not run: it cannot run under --gpu-memory-limit' ||
  fail "gpu-mem ran under a limit below the graph's size"
[ "$(echo "$out" | grep -c "^validation: *passed (4 of 4 trees")" -eq 3 ] ||
  fail "not 3 validated modes under the limit"
out=$(timeout 120 "$bfs" -f "$dir/g20.g500" -m gpu-zerocopy,gpu-devio,gpu-hostio -n 1 \
  --gpu-memory-limit 1M 2>&1) || fail "a limit no mode fits: $out"
[ "$(echo "$out" | grep -c ": not run: ")" -eq 3 ] || fail "a limit no mode fits: $out"
echo "PASS"
