#!/usr/bin/env bash
# Session 6, final code: GPU suite, the new staging-wait test verbosely, and the rate of
# 1 MiB vs 4 MiB pinned host->GPU copies from 1 and 16 threads (what the one-caller 16 MiB
# read's copies cost).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u; git log --oneline -1 2>/dev/null
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite-final.log 2>&1; echo "gpu suite rc=$?"; grep -E "tests passed|Failed|Not Run|\*\*\*" $OUT/gpu-suite-final.log
build-dev/tests/gpu_staging_wait_test 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) " 
for io in 1M 4M 16M; do for w in 1 16; do
  printf "pinned-copy %-4s w%-3s " $io $w; $B -q -f $R -s 4G -x pinned-copy -i $io -w $w -T 1 -r 3 | grep -E '^pinned' | cut -c1-80
done; done
date -u
