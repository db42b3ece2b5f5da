#!/usr/bin/env bash
# Session 6 experiment 4: does the nvidia row (NVIDIA's libcufile, loaded and opened in the
# bench process) leave something that burns CPU during the later ufile rows?
# --lib /nonexistent skips loading it. Also lists the process's threads after each table.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
tbl() { echo "== $*"; "$@" 2>&1 | grep -E '^(ufile |naive |raw |cpu |nvidia )' | cut -c1-110; }
for k in 1 2; do
  tbl $B -q -f $R -s 4G -I read -i 16M -T 2 -r 3 --cold --odirect --compare --verify-bytes 16M
  tbl $B -q -f $R -s 4G -I read -i 16M -T 2 -r 3 --cold --odirect --compare --verify-bytes 16M --lib /nonexistent
done
cat $R > /dev/null
for k in 1 2; do
  tbl $B -q -f $R -s 4G -I randread -i 4k -w 1 -T 2 -r 3 --compare --verify-bytes 16M
  tbl $B -q -f $R -s 4G -I randread -i 4k -w 1 -T 2 -r 3 --compare --verify-bytes 16M --lib /nonexistent
done
# per-thread CPU (utime+stime ticks) of the bench over 10 s late in a compare run
snap() { for t in /proc/$1/task/*; do echo "$(basename $t) $(cat $t/comm 2>/dev/null | tr ' ' _) $(awk '{print $14+$15}' $t/stat 2>/dev/null)"; done | sort; }
$B -q -f $R -s 4G -I randread -i 4k -w 1 -T 4 -r 3 --compare --verify-bytes 16M > $OUT/threads-run.txt 2>&1 & p=$!
snap $p > /tmp/s0
for i in 1 2 3 4 5 6 7 8; do sleep 10; snap $p > /tmp/s$i; echo "-- ticks per thread, $((i*10-10))-$((i*10)) s:"; join /tmp/s$((i-1)) /tmp/s$i | awk '{d=$5-$3; if (d>0) print d, $2}' | sort -rn | head -6 | tr '\n' ';'; echo " threads: $(wc -l < /tmp/s$i)"; done
wait $p; grep -E '^(ufile |naive |nvidia )' $OUT/threads-run.txt | cut -c1-110
date -u
