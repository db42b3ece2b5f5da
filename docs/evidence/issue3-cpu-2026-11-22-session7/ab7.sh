#!/usr/bin/env bash
# Session 7: hot reads, the binary of 87fe394 (session 6's final code) against this one
# (0d38f85: a participant whose second chunk is the last leases a second buffer; O_DIRECT waits
# poll; thread names), alternating, one process a row.
set -u
NEW=build-dev/tools/ufile-bench/ufile-bench
OLD=build-dev/ufile-bench-87fe394
R=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
date -u
$NEW -q -f $R -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
cat $R > /dev/null
for k in 1 2 3; do
  for b in OLD NEW; do
    B=${!b}
    for a in "16M 16" "16M 1" "64M 1" "1G 1"; do
      set -- $a
      printf "%-4s hot %-4s w%-3s " $b $1 $2; $B -q -f $R -s 4G -x ufile -I read -i $1 -w $2 -T 2 -r 3 | grep -E '^ufile' | cut -c1-100
    done
  done
done
date -u
