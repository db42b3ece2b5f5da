#!/bin/bash
# Issue 7: cold O_DIRECT reads, more queues / proxy workers.
cd "$(dirname "$0")/.." || exit 1
B=$PWD/build-dev7
L=$OUT/log.txt
date -u > $L
step() { echo "=== $*" >> $L; local t0=$(date +%s); "$@" >> $L 2>&1; echo "=== rc=$? $(( $(date +%s)-t0 ))s" >> $L; }
F=$B/tmp/bench.dat
UB="timeout 200 $B/tools/ufile-bench/ufile-bench -f $F -s 4G -q -T 2"
step $UB -r 3 -x device -I read -i 1M --compare -w 16 --cold --odirect --json-file $OUT/rows.json --devio queues=16,groups=32,proxythreads=16
step $UB -r 3 -x device -I read -i 4M --compare -w 16 --cold --odirect --json-file $OUT/rows.json --devio queues=16,groups=32,staging=4M,proxythreads=16
