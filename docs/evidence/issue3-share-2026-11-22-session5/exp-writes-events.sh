#!/usr/bin/env bash
# 1. Buffered and O_DIRECT writes at request parallelism 2/4/8/16 (CUFILE_ENV_PATH_JSON).
# 2. Copy-lane events with CU_EVENT_BLOCKING_SYNC (temporary UFILE_EXP_BLOCKING_EVENTS) or not.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
for p in 2 4 8 16; do echo "{\"execution\": {\"max_request_parallelism\": $p}}" > /tmp/p$p.json; done
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
cat $R > /dev/null
row() { printf "%-44s " "$1"; shift; "$@" | grep '^ufile' | cut -c1-100; }
for io in 16M 1G; do
  for p in 16 4 2 8; do
    row "write $io buffered P=$p" env CUFILE_ENV_PATH_JSON=/tmp/p$p.json $B -q -f $W -s 4G -x ufile -I write -i $io -T 1.5 -r 3
  done
done
for p in 16 4 8; do
  row "write 16M odirect P=$p" env CUFILE_ENV_PATH_JSON=/tmp/p$p.json $B -q -f $W -s 4G -x ufile -I write -i 16M -T 2 -r 3 --odirect
done
for cfg in spin block spin block; do
  e=""; [ $cfg = block ] && e="UFILE_EXP_BLOCKING_EVENTS=1"
  for io in 16M 64M 256M 1G; do
    row "read $io w=1 $cfg" env $e $B -q -f $R -s 4G -x ufile -I read -i $io -T 1 -r 3
  done
  row "read 16M w=16 $cfg" env $e $B -q -f $R -s 4G -x ufile -I read -i 16M -w 16 -T 1 -r 3
  row "read 256M w=16 $cfg" env $e $B -q -f $R -s 4G -x ufile -I read -i 256M -w 16 -T 1 -r 3
  row "write 16M buffered w=1 $cfg" env $e $B -q -f $W -s 4G -x ufile -I write -i 16M -T 1.5 -r 3
done
