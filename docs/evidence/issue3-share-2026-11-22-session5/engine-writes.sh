#!/usr/bin/env bash
set -u
B=build-dev/tools/ufile-bench/ufile-bench
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
ctest --test-dir build-dev -L gpu --output-on-failure > $OUT/gpu-suite.log 2>&1; echo "gpu suite rc $?"; tail -6 $OUT/gpu-suite.log
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { printf "%-34s " "$1"; shift; "$@" | grep '^ufile' | cut -c1-100; }
for round in 1 2; do
  for io in 16M 1G; do
    row "write $io io_uring r$round" $B -q -f $W -s 4G -x ufile -I write -i $io -T 1.5 -r 3
    row "write $io posix r$round" env UFILE_ENGINE=thread_pool $B -q -f $W -s 4G -x ufile -I write -i $io -T 1.5 -r 3
  done
done
