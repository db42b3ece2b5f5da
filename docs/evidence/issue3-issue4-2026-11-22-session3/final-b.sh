#!/bin/bash
# Session 3: after the copy-lane reuse fix. GPU suite, then the pipeline
# (-r 5, which hung 5 times of 5 before the fix) twice with a hang check.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
date -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite.log 2>&1
grep -E 'tests passed|Failed|copy_lanes' $OUT/gpu-suite.log
mkdir -p /tmp/q
for i in 1 2; do
  stdbuf -oL $B -d 0 -x pipeline -f /tmp/q/in.dat -s 1G -i 16M -r 5 > $OUT/pipeline-$i.log 2>&1 &
  pid=$!
  for t in $(seq 1 80); do kill -0 $pid 2>/dev/null || break; sleep 1; done
  if kill -0 $pid 2>/dev/null; then kill -9 $pid; echo "pipeline $i: HUNG"; tail -2 $OUT/pipeline-$i.log
  else wait $pid; echo "pipeline $i: exit $?"; grep -E '^pipeline, [^,]*: ' $OUT/pipeline-$i.log; fi
done
F=/tmp/ub/read-4g.dat; mkdir -p /tmp/ub
$B -q -f $F -s 4G -I read -i 1G -x cpu -n 1 > /dev/null 2>&1
$B -q -f $F -s 4G -I read -i 128K:16M:x2 -x pinned-copy -T 1 -r 3 2>&1 | grep -E '^(type|pinned)' | tee $OUT/pinned-sizes.log
date -u
