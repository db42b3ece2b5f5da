#!/usr/bin/env bash
# Session 7 experiment 4: would registered buffers (io_uring READ_FIXED) cut the kernel CPU of
# cold O_DIRECT reads? uring_fixed_probe (docs/evidence/.../uring_fixed_probe.cpp): 4 threads,
# 4 MiB chunks of 1 MiB pieces (ufile's one-caller 16 MiB request), each cold from the start.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
P=build-dev/uring_probe
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
for k in 1 2; do
  for mem in malloc cuda; do
    for mode in pread uring fixed; do $P $R $mode $mem 4 4 1 2; done
  done
  $P $R pread cuda 16 16 16 2
  $P $R fixed cuda 16 16 1 2
  $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 1 --cold --odirect | grep -E '^ufile'
done
date -u
