#!/bin/bash
B=$(cd "$(dirname "$0")" && pwd)
L=$OUT/log.txt
{ date -u; nvidia-smi -L; } > $L 2>&1
step() { echo "=== $*" >> $L; local t0=$(date +%s); "$@" >> $L 2>&1; echo "=== rc=$? $(( $(date +%s)-t0 ))s" >> $L; }
F=/tmp/bench.dat
UB="timeout 150 $B/ufile-bench -f $F -s 4G -q -T 2 -x device -I randread -w 1"
step $UB -r 5 -i 4k --compare --json-file $OUT/rows.json --devio ll=both
step $UB -r 3 -i 4k --devio paths=proxy,ll=staged,qd1threads=32,queues=1,groups=1
step $UB -r 3 -i 64k --devio paths=proxy,mode=block,queues=8,groups=32,proxythreads=8,opts=fixed
step $UB -r 3 -i 64k --devio paths=proxy,mode=block,queues=8,groups=32,proxythreads=8,opts=fixed+ll+llstaged
tail -c 20000 $L > $OUT/tail.txt
