#!/usr/bin/env bash
# Session 6 experiment 3: GPU suite; cold O_DIRECT reads of 64/256 MiB through the read
# pipeline (UFILE_EXP_PIPE_DIRECT=1, the old behaviour) or the double buffering (default now).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite.log 2>&1; echo "gpu suite rc=$?"; grep -E "tests passed|Failed|Not Run|\*\*\*" $OUT/gpu-suite.log
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
row() { local tag="$1"; local e="$2"; shift 2; printf "%-34s " "$tag"; env $e "$@" | grep -E '^(ufile|naive|pinned|raw)' | cut -c1-100; }
for k in 1 2 3; do
  row "cold 64M raw w16" "X=1" $B -q -f $R -s 4G -x raw -I read -i 64M -w 16 -T 2 -r 3 --cold --odirect
  row "cold 64M w1 pipeline" "UFILE_EXP_PIPE_DIRECT=1" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
  row "cold 64M w1 double" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
done
row "cold 256M w1 pipeline" "UFILE_EXP_PIPE_DIRECT=1" $B -q -f $R -s 4G -x ufile -I read -i 256M -w 1 -T 3 -r 3 --cold --odirect
row "cold 256M w1 double" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 256M -w 1 -T 3 -r 3 --cold --odirect
cat $R > /dev/null
row "hot 64M w1" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 1 -r 3
date -u
