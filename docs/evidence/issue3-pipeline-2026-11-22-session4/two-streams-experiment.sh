#!/usr/bin/env bash
B=build-dev/tools/ufile-bench/ufile-bench; F=/tmp/ufile-bench/read-4g.dat; mkdir -p /tmp/ufile-bench
[ -f $F ] || $B -q -d 0 -f $F -s 4G -x cpu -n 1 -i 16M > /dev/null 2>&1; cat $F > /dev/null
L=$OUT/ab.log; date -u > $L
$B -q -d 0 -f $F -x pinned-copy -i 1G -T 1 -r 3 >> $L 2>&1
for p in 1 2 3 4; do echo "== process $p" >> $L; $B -q -d 0 -f $F -x ufile -i 64M:1G:x4 -T 1 -r 3 >> $L 2>&1; done
echo "== verify" >> $L; $B -q -d 0 -f $F -x ufile -i 64M:1G:x4 -T 1 -r 1 -V --verify-bytes 4G >> $L 2>&1
