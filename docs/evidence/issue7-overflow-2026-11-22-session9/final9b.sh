#!/usr/bin/env bash
# Session 9, final check 2 of 2: issue 7 write rows, cold rows, the walk.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/devio.dat
mkdir -p /tmp/ufile-bench
date -u
[ -f $F ] || $B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1
J="--json-file $OUT/rows.json"
UB="timeout 250 $B -f $W -s 4G -q -T 2"
$UB -r 3 -x device -I write -i 1M --compare -w 16 $J --devio proxythreads=8
date -u
$UB -r 3 -x device -I write -i 4M -w 16 --compare $J --devio queues=8,staging=4M,proxythreads=8
date -u
cat $F > /dev/null
for i in 1 2 3; do
  timeout 120 $B -f $F -s 4G -q -T 2 -r 1 -x device-chase $J --devio walkers=256,steps=4000,paths=nocpu 2>&1 | grep -E "^(host|device)"
done
timeout 150 $B -f $F -s 4G -q -T 2 -r 1 -x device-chase $J --devio walkers=1+16+64,steps=2000 2>&1 | grep -E "^(host|device)"
date -u
timeout 250 $B -f $F -s 4G -q -T 2 -r 3 -x device -I read -i 1M --compare -w 16 --cold --odirect $J --devio queues=16,groups=32,proxythreads=16
date -u
