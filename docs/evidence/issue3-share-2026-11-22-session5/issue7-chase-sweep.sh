#!/usr/bin/env bash
# Dependent-offset walk: device (no-CPU) against the host-driven loops, knobs swept.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
run() {
  echo "=== $1"
  timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device-chase --devio "$1,paths=nocpu" 2>&1 | grep -E "^(host|device)"
}
for i in 1 2 3; do run walkers=256,steps=4000; done
for i in 1 2; do run walkers=256,steps=4000,sqthreads=16; done
run walkers=256,steps=4000,sqthreads=14
run walkers=256,steps=4000,sqthreads=16,queues=32
run walkers=256,steps=4000,sqthreads=16,queues=128
run walkers=384,steps=4000,sqthreads=16
run walkers=512,steps=3000,sqthreads=16
run walkers=128,steps=4000,sqthreads=16
