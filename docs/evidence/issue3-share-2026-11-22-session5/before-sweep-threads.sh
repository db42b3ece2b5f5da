#!/usr/bin/env bash
# ufile at 1/4/8/16 callers, hot 4 GiB file, then --compare at -w 16 and -w 4.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null 2>&1  # creates the file
cat $F > /dev/null
for io in 16M 64M 256M 1G; do
  for w in 1 4 8 16; do
    [ "$io" = 1G ] && [ $w -gt 4 ] && continue
    $B -q -f $F -s 4G -x ufile -I read -i $io -w $w -T 1 -r 3
  done
done
$B -q -f $F -s 4G -I read -i 16M:256M:x4 -w 16 -T 1 -r 3 -V --compare
$B -q -f $F -s 4G -I read -i 1G -w 4 -T 1 -r 3 -V --compare
