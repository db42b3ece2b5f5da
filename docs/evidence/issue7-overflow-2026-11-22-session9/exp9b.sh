#!/usr/bin/env bash
# Session 9, call 2: device waits that time out when the poll back-off is set (poll_ns > 0).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
[ -f $F ] || $B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
iops() {
  echo "=== iops $1"
  timeout 60 $B -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k --devio "$1,timeout=3000" 2>&1 | grep -E "dev-|qd1"
}
iops queues=16,sqthreads=12,groups=64,poll=500,paths=nocpu
iops queues=16,sqthreads=12,groups=64,poll=500,paths=proxy,proxythreads=12
iops queues=16,sqthreads=12,groups=64,poll=500,paths=nocpu,mode=block
iops queues=16,sqthreads=12,groups=256,poll=500,paths=nocpu,threads=32
iops queues=16,sqthreads=12,groups=64,poll=100,paths=nocpu
iops queues=16,sqthreads=12,groups=64,poll=200,paths=nocpu
iops queues=16,sqthreads=12,groups=64,poll=0,paths=nocpu
date -u
