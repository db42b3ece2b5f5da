#!/usr/bin/env bash
# Session 7 experiment 2: O_DIRECT requests wait for their staging copies on blocking events
# (A, the current code; the CUDA event-handler thread takes each completion interrupt) or
# sleep-poll a spinning event with cuEventQuery (B: first sleep bytes/DIV ns, then STEP us).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { local tag="$1"; local e="$2"; shift 2; printf "%-40s " "$tag"; env $e "$@" --thread-cpu 2>&1 | grep -E '^(ufile|naive|raw) |CPU by thread' | sed -E 's/^ +(ufile|naive|raw) (read|write) [^:]*: CPU by thread: /    /' | cut -c1-150 | tr '\n' ' '; echo; }
for k in 1 2; do
  row "raw cold 16M w16" "X=1" $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 3 --cold --odirect
  for e in X=1 UFILE_EXP_POLL=1 "UFILE_EXP_POLL=1 UFILE_EXP_POLL_STEP=50"; do
    row "$e cold 16M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
    row "$e wr odirect 16M w1" "$e" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
    row "$e wr odirect 1G w1" "$e" $B -q -f $W -s 4G -x ufile -I write -i 1G -w 1 -T 3 -r 2 --odirect
    row "$e cold 64M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
  done
done
row "naive cold 16M w4 x16M" "X=1" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
row "naive wr odirect 16M w4" "X=1" $B -q -f $W -s 4G -x naive -I write -i 16M -w 4 -T 2 -r 3 --odirect
row "raw wr odirect 16M w16" "X=1" $B -q -f $W -s 4G -x raw -I write -i 16M -w 16 -T 2 -r 3 --odirect
date -u
