#!/usr/bin/env bash
# Session 6 experiment 6: where the time of one 16 MiB hot read into GPU memory goes, one
# caller (temporary UFILE_EXP_TIMELINE instrumentation: per request, when each participant
# starts, how long its reads take, when the last read ends, when the last copy is waited).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
cat $R > /dev/null
for p in 4 8 16; do echo "{\"execution\": {\"max_request_parallelism\": $p}}" > /tmp/p$p.json; done
for k in 1 2; do
  for p in 16 8 4; do
    echo "== hot 16M w1 P=$p"
    env UFILE_EXP_TIMELINE=1 CUFILE_ENV_PATH_JSON=/tmp/p$p.json $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 2>&1 | grep -E '^(ufile |EXPTL)' | cut -c1-400
  done
  echo "== hot 16M w1 P=16 thread_pool engine"
  env UFILE_EXP_TIMELINE=1 UFILE_ENGINE=thread_pool $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 2>&1 | grep -E '^(ufile |EXPTL)' | cut -c1-400
  echo "== hot 16M w1 P=16 no instrumentation"
  $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 2>&1 | grep -E '^(ufile )' | cut -c1-100
  echo "== cpu row: one thread, 16 MiB preads, host memory"
  $B -q -f $R -s 4G -x cpu -I read -i 16M -w 1 -T 2 -r 3 2>&1 | grep -E '^(cpu )' | cut -c1-100
  echo "== cpu row: one thread, 1 MiB preads, host memory"
  $B -q -f $R -s 4G -x cpu -I read -i 1M -w 1 -T 2 -r 3 2>&1 | grep -E '^(cpu )' | cut -c1-100
done
date -u
