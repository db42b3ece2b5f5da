#!/usr/bin/env bash
# Session 6 experiment 7: the worker pool wakes as many sleeping threads as it has offers
# (B, default) or all of them when it has more than one offer (A, UFILE_EXP_NOTIFY_ALL=1, the
# old behaviour); then the GPU suite on this build.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
A="UFILE_EXP_NOTIFY_ALL=1"
row() { local tag="$1"; local e="$2"; shift 2; printf "%-34s " "$tag"; env $e "$@" | grep -E '^(ufile|naive|pinned|raw)' | cut -c1-100; }
for k in 1 2 3; do
  row "cold 16M w1 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "cold 16M w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "write odirect 16M w1 A" "$A" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
  row "write odirect 16M w1 B" "X=1" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
done
cat $R > /dev/null
for k in 1 2 3; do
  row "hot 16M w4 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 1 -r 3
  row "hot 16M w4 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 1 -r 3
  row "hot 16M w1 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 1 -r 3
  row "hot 16M w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 1 -r 3
done
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite-exp6g.log 2>&1; echo "gpu suite rc=$?"; grep -E "tests passed|Failed|Not Run|\*\*\*" $OUT/gpu-suite-exp6g.log
date -u
