#!/usr/bin/env bash
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite-final.log 2>&1; echo "gpu suite rc $?"; grep -E "tests passed|Failed|Passed" $OUT/gpu-suite-final.log | tail -16
$B -q -f $W -s 4G -I write -i 16M:1G:x64 -T 1.5 -r 3 -V --compare > $OUT/write-buffered-final.txt 2>&1
$B -q -f $R -s 4G -I read -i 16M:1G:x4 -T 1 -r 3 -V --compare > $OUT/hot-read-final.txt 2>&1
grep -E "^(compare|pinned|raw|naive|ufile|target)" $OUT/write-buffered-final.txt $OUT/hot-read-final.txt | cut -c1-170
