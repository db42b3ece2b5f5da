#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: nvidia_exports_test.sh NM OUR_LIBRARY OUR_API_LIST WORK
# Every function that NVIDIA's cufile.h declares and NVIDIA's libcufile.so.0
# exports must be exported by ours. Exits 77 (skip) where NVIDIA's library is
# absent. NVIDIA's other exports (C++ and CUDA kernel stubs) are listed, not required.
# UFILE_NVIDIA_EXPORTS_LIST may name a saved `nm -D --defined-only` listing of
# NVIDIA's library to use instead of the library itself.
set -u
export LC_ALL=C # one sort order wherever the lists were made
nm=$1 ours=$2 our_api=$3 work=$4
home=${UFILE_NVIDIA_CUDA_HOME:-$UFILE_ABI_NVIDIA_HOME_DEFAULT}
theirs=$home/lib64/libcufile.so.0
mkdir -p "$work"
listing=${UFILE_NVIDIA_EXPORTS_LIST:-}
if [ -n "$listing" ]; then
  theirs="$listing (a listing of NVIDIA's libcufile.so.0)"
elif [ ! -e "$theirs" ]; then
  echo "skipped: NVIDIA's libcufile.so.0 is not at $theirs (set UFILE_NVIDIA_CUDA_HOME)"
  exit 77
fi
nm=$(command -v "$nm" || command -v nm) || { echo "skipped: no nm here to read symbol tables"; exit 77; }
[ -f "$ours" ] || { echo "FAIL: $ours not built"; exit 1; }

# The functions NVIDIA's header declares: its own list where it can be read,
# else ours (abi_nvidia_header proves the two lists equal).
if dir=$(sh "$UFILE_ABI_SRC/nvidia_abi.sh" resolve "$work/nvidia" 2>"$work/resolve.log") &&
  [ -s "$dir/api.txt" ]; then
  declared=$dir/api.txt
else
  declared=$our_api
  echo "note: NVIDIA's header could not be read here; using include/cufile.h's list"
fi
# Function symbols, from nm's default (address type name) format.
functions() { awk 'NF == 3 && ($2 == "T" || $2 == "W" || $2 == "i") { sub(/@.*/, "", $3); print $3 }' | sort -u; }
exports() { "$nm" -D --defined-only "$1" | functions; }
if [ -n "$listing" ]; then
  functions <"$listing" >"$work/nvidia_exports.txt"
else
  exports "$theirs" >"$work/nvidia_exports.txt"
fi
exports "$ours" >"$work/ufile_exports.txt"
sed -n 's/^function //p' "$declared" | sort -u >"$work/declared.txt"
comm -12 "$work/declared.txt" "$work/nvidia_exports.txt" >"$work/required.txt"
missing=$(comm -23 "$work/required.txt" "$work/ufile_exports.txt")
others=$(comm -23 "$work/nvidia_exports.txt" "$work/declared.txt" | grep -c '^cuFile')
unexported=$(comm -23 "$work/declared.txt" "$work/nvidia_exports.txt" | tr '\n' ' ')
[ -z "$unexported" ] || echo "note: declared by NVIDIA's header but not exported by its library: $unexported"
echo "note: NVIDIA also exports $others other cuFile* symbols (internal; see $work/nvidia_exports.txt)"
if [ -n "$missing" ]; then
  echo "FAIL: exported by NVIDIA's $theirs but not by $ours:"
  echo "$missing" | sed 's/^/  /'
  exit 1
fi
echo "ok: all $(wc -l <"$work/required.txt") API functions that $theirs exports are exported by $ours"
