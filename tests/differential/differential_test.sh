#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: differential_test.sh PROBE UFILE_LIB KNOWN_DIFFERENCES OUT_DIR
# Runs PROBE against NVIDIA's libcufile.so.0 and against UFILE_LIB (each case
# in its own process), then compare.py compares the outputs key by key: a
# difference passes only where KNOWN_DIFFERENCES lists its key with the value
# each library gives (docs/API.md says more). OUT_DIR keeps both outputs,
# differences.txt and differences.txt.proposed (list lines for what no entry
# excused). Exit 77 where NVIDIA's library or a GPU is absent.
set -u
probe=$1 ours=$2 known=$3 out=$4
here=$(dirname "$0")
home=${UFILE_NVIDIA_CUDA_HOME:-/usr/local/cuda}
theirs=$home/lib64/libcufile.so.0
[ -f "$theirs" ] || { echo "SKIPPED: no NVIDIA library at $theirs"; exit 77; }
[ -e /dev/nvidiactl ] || { echo "SKIPPED: no NVIDIA GPU (/dev/nvidiactl)"; exit 77; }
mkdir -p "$out"
rm -f "$out"/*.txt "$out"/*.log "$out"/*.proposed
# Both libraries get the same log file path (the ENV_LOGFILE_PATH getter
# shows it); each log is moved aside after its run.
run() {  # name library
  ( cd "$out" && CUFILE_LOGFILE_PATH=$out/cufile.log "$probe" "$2" >"$1.txt" 2>"$1.stderr" )
  [ -f "$out/cufile.log" ] && mv "$out/cufile.log" "$out/$1.log"
  return 0
}
# NVIDIA's library has crashed now and then in a case that passes on a rerun
# (cuFileStatsStop on 4 x H200): such a case runs alone up to twice more and
# the first run that ends normally is compared in its place. A case that
# crashes every time stays a crash; ufile's crashes are never rerun.
rerun_crashed() {  # name library
  for c in $(sed -n 's/^\([A-Za-z0-9_]*\)\.END crashed.*/\1/p' "$out/$1.txt"); do
    for try in 1 2; do
      ( cd "$out" && CUFILE_LOGFILE_PATH=$out/cufile.log "$probe" "$2" "$c" >rerun.txt 2>>"$1.stderr" )
      [ -f "$out/cufile.log" ] && cat "$out/cufile.log" >>"$out/$1.log" && rm -f "$out/cufile.log"
      grep -qx "$c.END exit 0" "$out/rerun.txt" || continue
      echo "$1: case $c crashed ($(grep "^$c\.END" "$out/$1.txt")); rerun $try ended normally and is compared"
      awk -v c="$c." 'FNR == NR { if (index($0, c) == 1) keep[++n] = $0; next }
        index($0, c) == 1 { if (!done) for (i = 1; i <= n; i++) print keep[i]; done = 1; next }
        { print }' "$out/rerun.txt" "$out/$1.txt" >"$out/merged.txt"
      mv "$out/merged.txt" "$out/$1.txt"
      break
    done
  done
  rm -f "$out/rerun.txt"
}
run nvidia "$theirs"
rerun_crashed nvidia "$theirs"
run ufile "$ours"
echo "NVIDIA: $theirs ($(wc -l <"$out/nvidia.txt") lines);" \
  "ufile: $ours ($(wc -l <"$out/ufile.txt") lines)"
python3 "$here/compare.py" "$out/nvidia.txt" "$out/ufile.txt" "$known" \
  --report "$out/differences.txt"
rc=$?
echo "full outputs and differences: $out"
exit $rc
