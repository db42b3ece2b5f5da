#!/usr/bin/env bash
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
git log --oneline -1 2>/dev/null; date -u
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite.log 2>&1; echo "gpu suite rc $?"; tail -25 $OUT/gpu-suite.log
$B -q -f $F -s 4G -I read -i 16M:256M:x4 -w 16 -T 1 -r 3 -V --compare > $OUT/hot-w16.txt 2>&1
$B -q -f $F -s 4G -I read -i 1G -w 4 -T 1 -r 3 -V --compare > $OUT/hot-w4-1g.txt 2>&1
grep -E "^(compare|pinned|naive|ufile|target)" $OUT/hot-w16.txt $OUT/hot-w4-1g.txt | cut -c1-160
