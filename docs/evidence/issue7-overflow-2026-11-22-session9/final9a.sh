#!/usr/bin/env bash
# Session 9, final check 1 of 2 (fresh machine): GPU suite, demo, issue 7 rows
# (4 KiB random + QD1 incl. LL staged, sequential 16 MiB).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
{ date -u; uname -r; nvidia-smi -L; cat build-dev/commit.txt; } 2>&1
cp build-dev/commit.txt $OUT/
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite.log 2>&1
echo "ctest rc=$?" >> $OUT/gpu-suite.log
tail -4 $OUT/gpu-suite.log
build-dev/tools/ufile-demo/ufile-demo 2>&1 | tail -3
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
UB="timeout 250 $B -f $F -s 4G -q -T 2"
J="--json-file $OUT/rows.json"
date -u
$UB -r 1 -x device -I randread -i 4k --compare -w 16 $J --devio probe=1,queues=16,sqthreads=12,groups=64
date -u
$UB -r 3 -x device -I randread -i 4k -w 1 --compare $J --devio ll=staged,paths=proxy
date -u
$UB -r 3 -x device -I read -i 16M --compare -w 16 $J --devio queues=12,staging=256K,proxythreads=12
date -u
