#!/bin/bash
# Device check for issue 7: GPU tests, final bench rows.
cd "$(dirname "$0")/.." || exit 1
B=$PWD/build-dev7
export UFILE_TEST_TMPDIR=$B/tmp; mkdir -p $UFILE_TEST_TMPDIR
L=$OUT/log.txt
{ date -u; uname -r; nvidia-smi -L; } > $L 2>&1
step() { echo "=== $*" >> $L; local t0=$(date +%s); "$@" >> $L 2>&1; echo "=== rc=$? $(( $(date +%s)-t0 ))s" >> $L; }
MODE=${1:-all}
if [ "$MODE" = all ] || [ "$MODE" = tests ]; then
  step timeout 240 $B/tests/gpu_devio_gpu_test --gtest_brief=1
fi
F=$B/tmp/bench.dat
UB="timeout 200 $B/tools/ufile-bench/ufile-bench -f $F -s 4G -q -T 2"
J="--json-file $OUT/rows.json"
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  step $UB -r 1 -x device -I randread -i 4k --compare -w 16 $J --devio probe=1,queues=16,sqthreads=12,groups=64
  step $UB -r 1 -x device -I randread -i 4k -w 16 $J --devio qd1threads=32,proxythreads=12,queues=16,sqthreads=12,groups=64
  step $UB -r 3 -x device -I read -i 16M --compare -w 16 $J --devio queues=12,staging=256K,proxythreads=12
  step $UB -r 3 -x device -I write -i 1M --compare -w 16 $J --devio proxythreads=8
  step $UB -r 3 -x device -I read -i 1M --compare -w 16 --cold --odirect $J --devio queues=8,groups=64
  step $UB -r 1 -x device-chase $J --devio walkers=1+16+64+256,steps=2000
fi
tail -c 100000 $L > $OUT/tail.txt
