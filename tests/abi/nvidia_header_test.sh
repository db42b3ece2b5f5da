#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: nvidia_header_test.sh OUR_DUMP OUR_API_LIST WORK
# Fails unless include/cufile.h has the same ABI facts (abi_dump.c), the same
# functions and enumerators, and at least the macros of NVIDIA's cufile.h (ours'
# extra macros are listed); exits 77 (skip) where NVIDIA's header is absent.
set -u
export LC_ALL=C # one sort order wherever the lists were made
our_dump=$1 our_api=$2 work=$3
mkdir -p "$work"
dir=$(sh "$UFILE_ABI_SRC/nvidia_abi.sh" resolve "$work/nvidia")
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
status=$(cat "$dir/status")
if [ "$status" != ok ]; then
  echo "FAIL: $status"
  cat "$dir/compile.log"
  exit 1
fi
"$our_dump" >"$work/ufile_abi.txt" || { echo "FAIL: $our_dump did not run"; exit 1; }
fail=0
if ! diff -u "$dir/abi.txt" "$work/ufile_abi.txt"; then
  echo "FAIL: ABI facts differ (- NVIDIA's header, + include/cufile.h)"
  fail=1
fi
for f in nvidia:"$dir/api.txt" ufile:"$our_api"; do
  grep -E '^(function|enumerator) ' "${f#*:}" >"$work/${f%%:*}_names"
  grep '^macro ' "${f#*:}" >"$work/${f%%:*}_macros"
done
if ! diff -u "$work/nvidia_names" "$work/ufile_names"; then
  echo "FAIL: functions or enumerators differ (- NVIDIA's header, + include/cufile.h)"
  fail=1
fi
missing=$(comm -23 "$work/nvidia_macros" "$work/ufile_macros" | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$missing" ] || { echo "FAIL: macros of NVIDIA's header missing from ours: $missing"; fail=1; }
extra=$(comm -13 "$work/nvidia_macros" "$work/ufile_macros" | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$extra" ] || echo "note: macros only in include/cufile.h: $extra"
[ "$fail" -eq 0 ] && echo "ok: $(wc -l <"$work/ufile_abi.txt") ABI facts, $(grep -c '^function ' \
  "$our_api") functions, $(grep -c '^enumerator ' "$our_api") enumerators identical to NVIDIA's header"
exit "$fail"
