#!/usr/bin/env bash
# Session 9, experiment: IORING_SETUP_SINGLE_ISSUER (0x1000) on the no-CPU rings, A/B alternating.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
for i in 1 2 3; do
  for fl in 0 0x1000; do
    echo "=== flags $fl iops"
    UFILE_DEVIO_EXP_SETUP_FLAGS=$fl timeout 60 $B -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k -w 16 --devio queues=16,sqthreads=12,groups=64,paths=nocpu 2>&1 | grep -E "dev-|qd1-nocpu|failed"
    echo "=== flags $fl chase"
    UFILE_DEVIO_EXP_SETUP_FLAGS=$fl timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device-chase --devio walkers=256,steps=4000,paths=nocpu 2>&1 | grep -E "^(host \(pread|device)"
  done
done
date -u
