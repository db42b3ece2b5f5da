#!/usr/bin/env bash
# Session 7 check of the final wait code (sleep and poll for O_DIRECT copies of 1 MiB or
# more, spin below): the rows it changes, with --thread-cpu, beside the naive loop; a 4 KiB
# O_DIRECT random row (copies under 1 MiB spin) and a hot row (unchanged path).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { local tag="$1"; shift; printf "%-28s " "$tag"; "$@" --thread-cpu 2>&1 | grep -E '^(ufile|naive|raw) |CPU by thread' | sed -E 's/^ +(ufile|naive|raw) (read|write|randread) [^:]*: CPU by thread: /    /' | cut -c1-150 | tr '\n' ' '; echo; }
for k in 1 2; do
  row "raw cold 16M w16" $B -q -f $R -s 4G -x raw -I read -i 16M -w 16 -T 2 -r 3 --cold --odirect
  row "ufile cold 16M w1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
  row "naive cold 16M w4" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
  row "ufile wr odirect 16M w1" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
  row "naive wr odirect 16M w4" $B -q -f $W -s 4G -x naive -I write -i 16M -w 4 -T 2 -r 3 --odirect
  row "ufile wr odirect 1G w1" $B -q -f $W -s 4G -x ufile -I write -i 1G -w 1 -T 3 -r 2 --odirect
  row "ufile cold 64M w1" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
done
row "ufile odirect 4K rand w1" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3 --odirect
row "naive odirect 4K rand w1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 1 -T 2 -r 3 --odirect
$B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 1 -r 1 > /dev/null
row "ufile hot 16M w1" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3
date -u
