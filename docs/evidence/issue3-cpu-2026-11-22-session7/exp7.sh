#!/usr/bin/env bash
# Session 7 experiment 1: where a one-caller cold O_DIRECT row's CPU goes (--thread-cpu),
# in --compare and standalone; and the RunRead second buffer (A = old: leased only while a
# chunk is unclaimed; B = new: whenever a second chunk was claimed), hot 16 MiB one caller.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
echo "== compare cold 16M, thread CPU"
$B -q -f $R -s 4G -T 2 -r 3 -x ufile -I read -i 16M --compare --cold --odirect --thread-cpu -w 1 2>&1 | grep -E '^(type|ufile|naive|pinned|raw|cpu|nvidia)|ufile read|CPU by thread.*(ufile|raw|naive)' | grep -v 'naive.*x.*MiB (1/1)' | cut -c1-220
echo "== standalone cold 16M"
for k in 1 2; do
  $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 3 --cold --odirect 2>&1 | grep -E '^raw'
  $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect --thread-cpu 2>&1 | grep -E '^ufile|CPU by thread' | cut -c1-220
done
echo "== A/B second buffer, hot 16M w1 and w4"
for k in 1 2 3; do
  for e in UFILE_EXP_SECOND_OLD=1 X=1; do
    printf "%-24s " "$e w1"; env $e $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 | grep -E '^ufile' | cut -c1-100
    printf "%-24s " "$e w4"; env $e $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 2 -r 3 | grep -E '^ufile' | cut -c1-100
  done
done
echo "== hot 16M w1 thread CPU"
$B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 1 --thread-cpu 2>&1 | grep -E '^ufile|CPU by thread' | cut -c1-220
date -u
