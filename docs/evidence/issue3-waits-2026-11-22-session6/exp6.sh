#!/usr/bin/env bash
# Session 6 experiment: A = old behaviour (UFILE_EXP_OLD_SMALL=1 UFILE_EXP_SPIN_DIRECT=1),
# B = new (lazy second staging lease, no redundant stream sync, blocking events for O_DIRECT).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
cat $R > /dev/null
A="UFILE_EXP_OLD_SMALL=1 UFILE_EXP_SPIN_DIRECT=1"
row() { local tag="$1"; local e="$2"; shift 2; printf "%-34s " "$tag"; env $e "$@" | grep -E '^(ufile|naive|pinned)' | cut -c1-100; }
for k in 1 2; do
  row "randread 4K w1 A" "$A" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
  row "randread 4K w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
  row "randread 4K w16 A" "$A" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
  row "randread 4K w16 B" "X=1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
done
row "randread 4K w1 naive" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 1 -T 2 -r 3
row "randread 4K w16 naive" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 16 -T 2 -r 3
row "randread 4K w16 B threadpool" "UFILE_ENGINE=thread_pool" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
row "randread 4K w1 B threadpool" "UFILE_ENGINE=thread_pool" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
for k in 1 2; do
  row "cold 16M w1 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "cold 16M w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "write odirect 16M w1 A" "$A" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
  row "write odirect 16M w1 B" "X=1" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
done
row "cold 64M w1 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
row "cold 64M w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
row "cold 16M w4 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
row "cold 16M w4 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
row "cold 16M w4 naive" "X=1" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
row "write odirect 1G w1 A" "$A" $B -q -f $W -s 4G -x ufile -I write -i 1G -w 1 -T 2 -r 3 --odirect
row "write odirect 1G w1 B" "X=1" $B -q -f $W -s 4G -x ufile -I write -i 1G -w 1 -T 2 -r 3 --odirect
row "write odirect 16M w16 naive" "X=1" $B -q -f $W -s 4G -x naive -I write -i 16M -w 16 -T 2 -r 3 --odirect
cat $R > /dev/null
for k in 1 2; do
  row "hot 16M w1 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 1 -r 3
  row "hot 16M w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 1 -r 3
  row "hot 16M w16 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 16 -T 1 -r 3
  row "hot 16M w16 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 16 -T 1 -r 3
  row "hot 1G w1 A" "$A" $B -q -f $R -s 4G -x ufile -I read -i 1G -w 1 -T 1 -r 3
  row "hot 1G w1 B" "X=1" $B -q -f $R -s 4G -x ufile -I read -i 1G -w 1 -T 1 -r 3
done
echo "== profiles (thread CPU per phase)"
for cfg in A B; do
  e="UFILE_EXP_PROF=1"; [ $cfg = A ] && e="UFILE_EXP_PROF=1 $A"
  for spec in "randread -i 4k -w 16" "read -i 16M -w 1 --cold --odirect"; do
    echo "-- $cfg $spec"; env $e $B -q -f $R -s 4G -x ufile -I $spec -T 2 -r 1 2>&1 | grep -E '^(ufile|EXPPROF)' | cut -c1-100
  done
  echo "-- $cfg write 16M odirect"; env $e $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 1 --odirect 2>&1 | grep -E '^(ufile|EXPPROF)' | cut -c1-100
done
date -u
