#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: differential_test.sh PROBE UFILE_LIB KNOWN_DIFFERENCES OUT_DIR
# Runs PROBE against NVIDIA's libcufile.so.0 and against UFILE_LIB (each in
# its own processes), then compares the outputs line by line, keyed by
# "<case>.<step>". A difference passes only if KNOWN_DIFFERENCES lists its key
# (an awk regular expression, then the reason: docs/API.md says more).
# Exit 77 where NVIDIA's library or a GPU is absent.
set -u
probe=$1 ours=$2 known=$3 out=$4
home=${UFILE_NVIDIA_CUDA_HOME:-/usr/local/cuda}
theirs=$home/lib64/libcufile.so.0
[ -f "$theirs" ] || { echo "skipped: no NVIDIA library at $theirs"; exit 77; }
[ -e /dev/nvidiactl ] || { echo "skipped: no NVIDIA GPU (/dev/nvidiactl)"; exit 77; }
mkdir -p "$out"
rm -f "$out"/*.txt
# The libraries' own logs go beside the outputs.
( cd "$out" && CUFILE_LOGFILE_PATH=$out/nvidia.log "$probe" "$theirs" >nvidia.txt 2>nvidia.stderr )
( cd "$out" && CUFILE_LOGFILE_PATH=$out/ufile.log "$probe" "$ours" >ufile.txt 2>ufile.stderr )
echo "NVIDIA: $theirs ($(wc -l <"$out/nvidia.txt") lines); ufile: $ours ($(wc -l <"$out/ufile.txt") lines)"
awk -v known="$known" -v report="$out/differences.txt" '
  BEGIN {
    while ((getline line < known) > 0) {
      if (line ~ /^#/ || line ~ /^[ \t]*$/) continue
      split(line, f, "\t"); pat[++np] = f[1]; why[np] = f[2]
    }
  }
  FNR == 1 { file++ }
  $1 !~ /^[a-z_0-9]+\.[^ ]/ { next }  # what a library printed itself
  {
    key = $1; rest = substr($0, length($1) + 2)
    if (file == 1) { a[key] = rest; order[++n] = key } else { b[key] = rest; if (!(key in a)) order[++n] = key }
  }
  END {
    same = 0; listed = 0; bad = 0
    for (i = 1; i <= n; i++) {
      k = order[i]
      if ((k in a) && (k in b) && a[k] == b[k]) { same++; continue }
      ex = ""
      for (j = 1; j <= np; j++) if (k ~ pat[j]) { ex = why[j]; break }
      line = k "\n  nvidia: " ((k in a) ? a[k] : "(no line)") "\n  ufile:  " ((k in b) ? b[k] : "(no line)")
      if (ex != "") { listed++; print "known  " line "\n  why:    " ex > report }
      else { bad++; print "DIFFER " line > report; print "DIFFER " line }
    }
    printf "%d keys: %d identical, %d known differences (docs/API.md), %d unexplained\n", n, same, listed, bad
    exit bad > 0
  }' "$out/nvidia.txt" "$out/ufile.txt"
rc=$?
echo "full outputs and differences: $out"
exit $rc
