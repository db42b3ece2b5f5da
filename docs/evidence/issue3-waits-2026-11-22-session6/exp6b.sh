#!/usr/bin/env bash
# Session 6 experiment 2: O_DIRECT minimum split chunk 1 vs 4 MiB (UFILE_EXP_DIRECT_MIN_MB),
# single-chunk reads waited by stream sync (UFILE_EXP_STREAMSYNC) or by event.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { local tag="$1"; local e="$2"; shift 2; printf "%-34s " "$tag"; env $e "$@" | grep -E '^(ufile|naive|pinned|raw)' | cut -c1-100; }
for k in 1 2; do
  row "cold 16M raw w16" "X=1" $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 3 --cold --odirect
  for m in 1 4 2; do
    row "cold 16M w1 min${m}M" "UFILE_EXP_DIRECT_MIN_MB=$m" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  done
  row "write odirect 16M raw w16" "X=1" $B -q -f $W -s 4G -x raw -I write -i 16M -w 16 -T 2 -r 3 --odirect
  for m in 1 4 2; do
    row "write odirect 16M w1 min${m}M" "UFILE_EXP_DIRECT_MIN_MB=$m" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
  done
done
row "cold 16M w4 min4M" "UFILE_EXP_DIRECT_MIN_MB=4" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
row "cold 64M w1 min4M" "UFILE_EXP_DIRECT_MIN_MB=4" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
cat $R > /dev/null
for k in 1 2 3; do
  row "randread 4K w1 naive" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 1 -T 2 -r 3
  row "randread 4K w1 event" "X=1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
  row "randread 4K w1 streamsync" "UFILE_EXP_STREAMSYNC=1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
  row "randread 4K w1 streamsync tp" "UFILE_EXP_STREAMSYNC=1 UFILE_ENGINE=thread_pool" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
done
for k in 1 2; do
  row "randread 4K w16 naive" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 16 -T 2 -r 3
  row "randread 4K w16 event" "X=1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
  row "randread 4K w16 streamsync" "UFILE_EXP_STREAMSYNC=1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
done
date -u
