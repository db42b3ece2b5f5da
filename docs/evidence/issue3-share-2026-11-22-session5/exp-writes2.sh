#!/usr/bin/env bash
# Buffered writes from GPU memory: participants capped at 1/2/4/16 (temporary
# UFILE_EXP_WRITE_PARTS), alternating, three rounds; then the write table.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
sync
row() { printf "%-30s " "$1"; shift; "$@" | grep '^ufile' | cut -c1-100; }
for round in 1 2 3; do
  for io in 16M 1G; do
    for p in 2 16 4 1; do
      row "write $io P=$p r$round" env UFILE_EXP_WRITE_PARTS=$p $B -q -f $W -s 4G -x ufile -I write -i $io -T 1.5 -r 3
    done
  done
done
$B -q -f $W -s 4G -I write -i 16M:1G:x64 -T 1.5 -r 3 -V --compare
