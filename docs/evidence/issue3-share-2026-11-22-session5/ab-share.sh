#!/usr/bin/env bash
# A: old (every request fans out to all 16), B: pool share, pipeline only alone,
# C: pool share, pipeline whenever split. Same file, hot, alternating.
set -u
B=build-dev/tools/ufile-bench/ufile-bench
F=/tmp/ufile-bench/read-4g.dat
mkdir -p /tmp/ufile-bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B -q -f $F -s 4G -x pinned-copy -i 1G -T 1 -r 1 | grep pinned
cat $F > /dev/null
for io in 16M 64M 256M 1G; do
  for w in 1 4 8 16; do
    [ "$io" = 1G ] && [ $w -gt 4 ] && continue
    for cfg in A B C; do
      case $cfg in
        A) env="UFILE_EXP_NOSHARE=1 UFILE_EXP_PIPE_SHARED=1";;
        B) env="";;
        C) env="UFILE_EXP_PIPE_SHARED=1";;
      esac
      printf "%-5s w=%-2s %s " $io $w $cfg
      env $env $B -q -f $F -s 4G -x ufile -I read -i $io -w $w -T 1 -r 3 | grep '^ufile'
    done
  done
done
$B -q -f $F -s 4G -I read -i 16M:1G:x4 -T 1 -r 3 -V --compare
