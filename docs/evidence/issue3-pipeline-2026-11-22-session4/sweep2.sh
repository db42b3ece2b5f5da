#!/usr/bin/env bash
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/q/read-4g.dat
mkdir -p /tmp/q
L=$OUT/sweep2.log
echo "date $(date -u +%FT%TZ)" > $L
[ -f $F ] || $B -q -d 0 -f $F -s 4G -x cpu -n 1 -i 16M >> $L 2>&1
cat $F > /dev/null
row() { echo "== $*" >> $L; env "$@" >> $L 2>&1; }
row X=1 $B -q -d 0 -f $F -x pinned-copy -i 1G -T 1 -r 3
row UFILE_PIPE_OFF=1 $B -q -d 0 -f $F -x ufile -i 16M:1G:x4 -T 1 -r 3
row X=1 $B -q -d 0 -f $F -x ufile -i 16M:1G:x4 -T 1 -r 3 -V --verify-bytes 4G
row UFILE_PIPE_TRACE=97 $B -q -d 0 -f $F -x ufile -i 16M:256M:x4 -T 1 -r 1
for kv in "UFILE_PIPE_CALLER=2" "UFILE_PIPE_CALLER=2 UFILE_PIPE_CHUNK_KB=512" "UFILE_PIPE_CALLER=0 UFILE_PIPE_CHUNK_KB=512" "UFILE_PIPE_MIN_COPY_KB=512" "UFILE_PIPE_SPINS=20000"; do
  row $kv $B -q -d 0 -f $F -x ufile -i 16M:1G:x4 -T 1 -r 3
done
row X=1 $B -q -d 0 -f $F -x pinned-copy -i 1G -T 1 -r 3
