#!/usr/bin/env bash
# Issue 7 write rows again: the host baseline (cuFileWrite, 16 threads) changed in session 5.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/devio.dat
mkdir -p /tmp/ufile-bench
date -u
UB="timeout 250 $B -f $F -s 4G -q -T 2"
$UB -r 3 -x device -I write -i 1M --compare -w 16 --devio proxythreads=8
$UB -r 3 -x device -I write -i 4M -w 16 --compare --devio queues=8,staging=4M,proxythreads=8
