#!/bin/bash
# Issue 7: no-CPU writes with more rings; chase with 16 SQPOLL threads.
cd "$(dirname "$0")/.." || exit 1
B=$PWD/build-dev7
mkdir -p $B/tmp
L=$OUT/log.txt
date -u > $L
step() { echo "=== $*" >> $L; local t0=$(date +%s); "$@" >> $L 2>&1; echo "=== rc=$? $(( $(date +%s)-t0 ))s" >> $L; }
F=$B/tmp/bench.dat
UB="timeout 200 $B/tools/ufile-bench/ufile-bench -f $F -s 4G -q -T 2"
J="--json-file $OUT/rows.json"
step $UB -r 3 -x device -I write -i 1M --compare -w 16 $J --devio paths=nocpu,queues=12,sqthreads=6
step $UB -r 3 -x device -I write -i 1M -w 16 $J --devio paths=nocpu,queues=16,sqthreads=4
step $UB -r 3 -x device -I write -i 4M -w 16 --compare $J --devio queues=8,staging=4M,proxythreads=8
step $UB -r 1 -x device-chase $J --devio walkers=256+1024,steps=1000,sqthreads=16
