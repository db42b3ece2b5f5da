#!/usr/bin/env bash
# Session 8: registered (fixed) io_uring buffers off (A) and on (B), alternating, one process a
# row, same binary (9a05232), switched by UFILE_IO_URING_FIXED_BUFFERS.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
W=/tmp/ufile-bench/write-4g.dat
mkdir -p /tmp/ufile-bench
date -u
echo "ulimit -l: $(ulimit -l); $(grep CapEff /proc/self/status)"
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
$B -q -f $W -s 4G -x pinned-copy -i 1G -T 1 -r 1 > /dev/null
row() { local tag="$1"; local e="$2"; shift 2; printf "%-34s " "$tag"; env $e CUFILE_LOGGING_LEVEL=WARN "$@" --thread-cpu 2>&1 | grep -E '^(ufile|naive|raw) |CPU by thread|refused|WARN|ERROR' | sed -E 's/^ +(ufile|naive|raw) (read|write|randread) [^:]*: CPU by thread: /    /' | cut -c1-150 | tr '\n' ' '; echo; }
for k in ${ROUNDS:-1 2}; do
  for f in ${ORDER:-0 1}; do
    e="UFILE_IO_URING_FIXED_BUFFERS=$f"
    row "fixed=$f cold 16M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
    row "fixed=$f cold 64M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 64M -w 1 -T 2 -r 3 --cold --odirect
    row "fixed=$f cold 16M w4" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
    row "fixed=$f wr odirect 16M w1" "$e" $B -q -f $W -s 4G -x ufile -I write -i 16M -w 1 -T 2 -r 3 --odirect
    row "fixed=$f wr odirect 1G w1" "$e" $B -q -f $W -s 4G -x ufile -I write -i 1G -w 1 -T 3 -r 2 --odirect
    cat $R > /dev/null  # the cold rows dropped it
    row "fixed=$f hot 16M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3
    row "fixed=$f hot 16M w16" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 16 -T 2 -r 3
    row "fixed=$f rand 4K w1" "$e" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
    row "fixed=$f rand 4K w16" "$e" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
  done
done
if [ "${NAIVE:-0}" = 1 ]; then
  row "naive cold 16M w4" "X=1" $B -q -f $R -s 4G -x naive -I read -i 16M -w 4 -T 2 -r 3 --cold --odirect
  row "naive wr odirect 1G w4" "X=1" $B -q -f $W -s 4G -x naive -I write -i 1G -w 4 -T 3 -r 2 --odirect
  cat $R > /dev/null
  row "naive rand 4K w1" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 1 -T 2 -r 3
fi
date -u
