#!/bin/bash
# Issue-3 experiment: staged chunk geometry for hot reads into GPU memory.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
D=/tmp/ub; F=$D/read-4g.dat; mkdir -p $D
nvidia-smi --query-gpu=name --format=csv,noheader
$B -q -f $F -s 4G -I read -i 1G -x cpu -n 1 > /dev/null 2>&1
cat $F > /dev/null
$B -q -f $F -s 4G -I read -i 1G -x pinned-copy -T 1 -r 3 2>&1 | tail -3
run() { echo "== per=$1 min_kb=$2 max_kb=$3"; UFILE_X_PER=$1 UFILE_X_MIN_KB=$2 UFILE_X_MAX_KB=$3 \
  $B -q -f $F -s 4G -I read -i 16M:1G:x4 -x ufile -T 1 -r 3 2>&1 | grep -v '^$' ; }
run 1 1024 1048576
run 4 256 1048576
run 4 512 1048576
run 2 512 1048576
run 8 128 1048576
run 4 256 4096
run 4 512 2048
run 8 256 2048
run 1 1024 1048576
