#!/bin/bash
set -u
B=build-x3/tools/ufile-bench/ufile-bench
D=/tmp/ub; F=$D/read-4g.dat; mkdir -p $D
$B -q -f $F -s 4G -I read -i 1G -x cpu -n 1 > /dev/null 2>&1
cat $F > /dev/null
for i in 16M 64M 1G; do echo "-- $i"; UFILE_X_PROF=1 $B -q -f $F -s 4G -I read -x ufile -T 1 -r 1 -i $i 2>&1 | grep -E "^ufile |PROF"; done
echo "-- 16M per4 min256"; UFILE_X_PER=4 UFILE_X_MIN_KB=256 UFILE_X_PROF=1 $B -q -f $F -s 4G -I read -x ufile -T 1 -r 1 -i 16M 2>&1 | grep -E "^ufile |PROF"
for p in 8 4 2; do echo "{\"execution\":{\"max_request_parallelism\":$p}}" > /tmp/p$p.json
  echo "-- 16M parallelism $p"; CUFILE_ENV_PATH_JSON=/tmp/p$p.json UFILE_X_PROF=1 $B -q -f $F -s 4G -I read -x ufile -T 1 -r 1 -i 16M 2>&1 | grep -E "^ufile |PROF"; done
echo "-- 16M 4 threads"; UFILE_X_PROF=1 $B -q -f $F -s 4G -I read -x ufile -T 1 -r 1 -i 16M -w 4 2>&1 | grep -E "^ufile |PROF"
echo "-- naive 16M 1 thread"; $B -q -f $F -s 4G -I read -x naive -T 1 -r 1 -i 16M 2>&1 | grep -E "^naive"
