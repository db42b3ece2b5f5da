#!/usr/bin/env bash
# Session 9, call 1: GPU suite on HEAD; the walk and the 4 KiB IOPS row against
# the waiting walkers' poll back-off and the SQPOLL thread count.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u; nvidia-smi -L; uname -r
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite.log 2>&1
echo "ctest rc=$?" >> $OUT/gpu-suite.log
tail -4 $OUT/gpu-suite.log
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
date -u
chase() {
  echo "=== chase $1"
  timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device-chase --devio "$1,paths=nocpu" 2>&1 | grep -E "^(host|device)"
}
for poll in 0 500 2000; do
  for sq in 12 16; do chase walkers=256,steps=4000,sqthreads=$sq,poll=$poll; done
done
iops() {
  echo "=== iops $1"
  timeout 60 $B -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k --devio "$1,paths=nocpu" 2>&1 | grep -E "dev-|qd1"
}
for poll in 0 500 2000; do iops queues=16,sqthreads=12,groups=64,poll=$poll; done
iops queues=16,sqthreads=16,groups=64,poll=500
date -u
