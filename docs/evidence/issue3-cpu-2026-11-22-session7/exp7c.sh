#!/usr/bin/env bash
# Session 7 experiment 3: where the remaining CPU of one-caller cold O_DIRECT reads goes, by
# thread group, with its kernel share and sleeps (--thread-cpu); io_uring against the POSIX
# engine; and with a second process reading another file (the disk shared, ufile slower):
# does the CPU per GB rise as the disk slows (a cost per second, not per byte)?
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { local tag="$1"; shift; echo "== $tag"; "$@" --thread-cpu 2>&1 | grep -E '^(ufile|naive|raw) |CPU by thread' | cut -c1-330; }
for k in 1 2; do
  row "raw cold 16M w16" $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 2 --cold --odirect
  row "ufile cold 16M w1 io_uring" env UFILE_ENGINE=io_uring $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 2 --cold --odirect
  row "ufile cold 16M w1 thread_pool" env UFILE_ENGINE=thread_pool $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 2 --cold --odirect
  row "naive cold 16M w4" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 2 --cold --odirect
done
echo "== with a second process reading $W (O_DIRECT, 4 threads x 16 MiB) meanwhile"
$B -q -f $W -s 4G -x raw -I read -i 16M -w 4 -T 40 -r 1 --odirect > /tmp/bg.txt 2>&1 &
BG=$!
sleep 1
row "ufile cold 16M w1 (shared disk)" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 2 --cold --odirect
row "naive cold 16M w4 (shared disk)" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 2 --cold --odirect
row "raw cold 16M w16 (shared disk)" $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 2 --cold --odirect
kill $BG 2>/dev/null; wait
date -u
