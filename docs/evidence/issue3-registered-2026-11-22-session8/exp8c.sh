#!/usr/bin/env bash
# Session 8 experiment c: registered files off (UFILE_IO_URING_FIXED_FILES=0) and on, registered
# buffers on in both, alternating, one process a row (binary of 509ab93).
set -u
B=build-dev/tools/ufile-bench/ufile-bench
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$B -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
row() { local tag="$1"; local e="$2"; shift 2; printf "%-30s " "$tag"; env $e "$@" 2>&1 | grep -E '^(ufile|naive) ' | cut -c1-110; }
for k in 1 2; do
  for f in ${ORDER:-0 1}; do
    e="UFILE_IO_URING_FIXED_FILES=$f"
    row "files=$f cold 16M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3 --cold --odirect
    cat $R > /dev/null
    row "files=$f rand 4K w1" "$e" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 1 -T 2 -r 3
    row "files=$f rand 4K w16" "$e" $B -q -f $R -s 4G -x ufile -I randread -i 4k -w 16 -T 2 -r 3
    row "files=$f hot 16M w1" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 1 -T 2 -r 3
    row "files=$f hot 16M w16" "$e" $B -q -f $R -s 4G -x ufile -I read -i 16M -w 16 -T 2 -r 3
  done
done
row "naive rand 4K w1" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 1 -T 2 -r 3
row "naive rand 4K w16" "X=1" $B -q -f $R -s 4G -x naive -I randread -i 4k -w 16 -T 2 -r 3
date -u
