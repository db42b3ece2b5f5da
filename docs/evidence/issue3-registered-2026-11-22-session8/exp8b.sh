#!/usr/bin/env bash
# Session 8 experiment b: (1) registered files, probed outside the build (probe/uring_files_probe.cpp);
# (2) buffered reads of at most UFILE_EXP_PREAD_MAX bytes through pread instead of io_uring
# (exp8b.diff), alternating, one process a row.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
P=build-dev/probe/probe
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
cat $R > /dev/null
for k in 1 2; do
  for m in pread uring files; do $P $R rand $m 1 2; done
  for m in pread uring files; do $P $R rand $m 16 2; done
done
for k in 1 2; do for m in pread uring files; do $P $R seq $m 4 2; done; done
cat $R > /dev/null
row() { local tag="$1"; local e="$2"; shift 2; printf "%-30s " "$tag"; env $e "$@" 2>&1 | grep -E '^(ufile|naive) ' | cut -c1-110; }
for k in 1 2 3; do
  for e in 0 4096 1048576; do
    row "pread<=$e rand 4K w1" "UFILE_EXP_PREAD_MAX=$e" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
    row "pread<=$e rand 4K w16" "UFILE_EXP_PREAD_MAX=$e" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
    row "pread<=$e hot 16M w1" "UFILE_EXP_PREAD_MAX=$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3
    row "pread<=$e hot 16M w16" "UFILE_EXP_PREAD_MAX=$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 16 -T 2 -r 3
  done
done
row "naive rand 4K w1" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 1 -T 2 -r 3
date -u
