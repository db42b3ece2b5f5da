#!/bin/bash
# devio-ll device check: GPU tests, QD1 rows (old and LL) in one run.
B=$(cd "$(dirname "$0")" && pwd)
export UFILE_TEST_TMPDIR=/tmp/ufile-test; mkdir -p $UFILE_TEST_TMPDIR
L=$OUT/log.txt
{ date -u; uname -r; nvidia-smi -L; nproc; } > $L 2>&1
step() { echo "=== $*" >> $L; local t0=$(date +%s); "$@" >> $L 2>&1; echo "=== rc=$? $(( $(date +%s)-t0 ))s" >> $L; }
MODE=${1:-all}; shift
if [ "$MODE" = all ] || [ "$MODE" = tests ]; then
  step timeout 300 $B/gpu_devio_gpu_test --gtest_brief=1 "$@"
fi
F=/tmp/bench.dat
UB="timeout 240 $B/ufile-bench -f $F -s 4G -q -T 2"
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  step $UB -r 3 -x device -I randread -i 4k -w 1 --compare --json-file $OUT/rows.json --devio ll=1,trace=1,probe=1 $BENCHX
fi
cp $L $OUT/full.txt 2>/dev/null; tail -c 20000 $L > $OUT/tail.txt
