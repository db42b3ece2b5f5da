#!/usr/bin/env bash
# Session 6 experiment 5: CPU of O_DIRECT chunks through io_uring (1 MiB pieces) or pread
# (UFILE_ENGINE=thread_pool), cold 16 MiB reads and 16 MiB O_DIRECT writes, one caller.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { local tag="$1"; local e="$2"; shift 2; printf "%-34s " "$tag"; env $e "$@" | grep -E '^(ufile|naive|pinned|raw)' | cut -c1-100; }
for k in 1 2 3; do
  row "cold 16M raw w16" "X=1" $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 3 --cold --odirect
  row "cold 16M w1 io_uring" "UFILE_ENGINE=io_uring" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "cold 16M w1 thread_pool" "UFILE_ENGINE=thread_pool" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "write odirect 16M w1 io_uring" "UFILE_ENGINE=io_uring" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
  row "write odirect 16M w1 thread_pool" "UFILE_ENGINE=thread_pool" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
done
row "cold 16M naive w4" "X=1" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
date -u
