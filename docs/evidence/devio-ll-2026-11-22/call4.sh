#!/bin/bash
B=$(cd "$(dirname "$0")" && pwd)
export UFILE_TEST_TMPDIR=/tmp/ufile-test; mkdir -p $UFILE_TEST_TMPDIR
L=$OUT/log.txt
{ date -u; nvidia-smi -L; } > $L 2>&1
step() { echo "=== $*" >> $L; local t0=$(date +%s); "$@" >> $L 2>&1; echo "=== rc=$? $(( $(date +%s)-t0 ))s" >> $L; }
step timeout 200 $B/gpu_devio_gpu_test --gtest_brief=1
F=/tmp/bench.dat
UB="timeout 150 $B/ufile-bench -f $F -s 4G -q -T 2 -r 3 -x device -I randread -i 4k -w 1"
step $UB --compare --json-file $OUT/rows.json --devio ll=both,trace=1,probe=1
export UFILE_DEVIO_PROXY_TIMING=1
step $UB --devio paths=proxy,ll=staged,trace=1,queues=1,groups=1
tail -c 20000 $L > $OUT/tail.txt
