#!/bin/bash
# Session 3: issue-4 pipeline layouts and issue-3 staged-read geometry.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/q /tmp/ub
date -u
$B -d 0 -x pipeline -f /tmp/q/in.dat -s 1G -i 16M -r 3 2>&1 | tee $OUT/pipeline.log
F=/tmp/ub/read-4g.dat
$B -q -f $F -s 4G -I read -i 1G -x cpu -n 1 > /dev/null 2>&1
cat $F > /dev/null
$B -q -f $F -s 4G -I read -i 16M -x pinned-copy -T 1 -r 3 2>&1 | tail -2
run() { echo "== piece=$1 slots=$2 onestream=$3"; UFILE_X_PIECE=$1 UFILE_X_SLOTS=$2 UFILE_X_ONESTREAM=$3 \
  $B -q -f $F -s 4G -I read -i 16M:1G:x4 -x ufile -T 1 -r 3 2>&1 | grep -v '^$' ; }
{
run 0 2 0
run 262144 2 0
run 262144 4 0
run 262144 4 1
run 131072 4 1
run 524288 4 1
run 1048576 4 1
run 262144 2 1
run 0 2 0
} 2>&1 | tee $OUT/grid.log
date -u
