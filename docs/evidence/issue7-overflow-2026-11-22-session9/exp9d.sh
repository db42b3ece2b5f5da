#!/usr/bin/env bash
# Session 9, call 4: the state of every ring when waits time out with a poll back-off.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
[ -f $F ] || $B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
cat $F > /dev/null
for i in 1 2 3 4; do
  echo "=== iops poll=500 run $i"
  UFILE_DEVIO_DUMP=1 timeout 60 $B -f $F -s 4G -q -T 2 -r 1 -x device -I randread -i 4k --devio "queues=16,sqthreads=12,groups=64,poll=500,timeout=3000,paths=nocpu" 2>&1 | grep -E "dev-|^q[0-9]"
done
date -u
