#!/bin/bash
# Issue-4 device run: GPU batch/stream tests, batch vs sync IOPS, pipeline.
set -u
cd "$(dirname "$0")/.."
O=${OUT:-/tmp/out4}; mkdir -p "$O"
B=build-dev4/tools/ufile-bench/ufile-bench
S=$O/summary.txt
{ date -u; nvidia-smi -L; nproc; uname -r; df -T /tmp | tail -1; cat build-dev4/commit.txt; } > "$O/env.txt" 2>&1
t0=$(date +%s)
timeout 200 ctest --test-dir build-dev4 -L gpu -R 'batch|stream' -V > "$O/ctest_gpu.log" 2>&1
echo "ctest rc $? in $(( $(date +%s) - t0 )) s" >> "$S"
grep -E "tests passed|tests failed|\*\*\*Failed|Passed|FAILED|Skipped" "$O/ctest_gpu.log" | tail -12 >> "$S"
mkdir -p /tmp/q
P="-q -d 0 -f /tmp/q/r.dat -s 1G -I randread -i 4k -r 3 -B 128"
C="$P -T 3 -V --verify-bytes 64M"
run() {
  echo "== $*" >> "$O/bench.log"
  local a=$(date +%s)
  timeout 100 "$@" >> "$O/bench.log" 2>&1
  echo "rc $? ($(( $(date +%s) - a )) s)" >> "$O/bench.log"
}
# The figures: defaults, timed runs unchecked, a 64 MiB check pass after each row.
run $B $C -x ufile -w 1
run $B $C -x batch -w 1
run $B $C -x ufile -w 4
run $B $C -x batch -w 4
# The same rows checked inside the timed runs (how issue 4 was first measured).
run $B $P -T 2 -V -x ufile -w 1
run $B $P -T 2 -V -x batch -w 1
# The choices: one copy per entry instead of the kernel; group sizes.
for w in 1 4; do
  run env UFILE_GATHER=memcpy $B $C -T 2 -x batch -w $w
  run env UFILE_BATCH_GROUP_MIN=8 $B $C -T 2 -x batch -w $w
  run env UFILE_BATCH_GROUP_MIN=128 $B $C -T 2 -x batch -w $w
done
# Pipeline: defaults, then request parallelism 4 and 2 (write contention).
run $B -d 0 -x pipeline -f /tmp/q/in.dat -s 1G -i 16M -r 3
for n in 4 2; do
  echo "{\"execution\": {\"max_request_parallelism\": $n}}" > /tmp/q/par$n.json
  run env CUFILE_ENV_PATH_JSON=/tmp/q/par$n.json $B -d 0 -x pipeline -f /tmp/q/in.dat -s 1G -i 16M -r 3
done
grep -E "^==|^ufile |^batch |^rc|pipeline|verify" "$O/bench.log" >> "$S"
echo "total $(( $(date +%s) - t0 )) s" >> "$S"
cat "$S"
