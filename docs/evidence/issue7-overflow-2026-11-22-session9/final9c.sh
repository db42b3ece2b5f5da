#!/usr/bin/env bash
# Session 9, check of the final tree's bench (target verdicts name their path).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u; cat build-dev/commit.txt
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k -w 1 --compare --devio paths=proxy,ll=staged
timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k -w 16 --compare --devio queues=16,sqthreads=12,groups=64,poll=500
date -u
