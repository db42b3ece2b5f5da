#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: expected_api_test.sh CC ABI_SOURCE_DIR API_LIST
# include/cufile.h (API_LIST, from list_api.sh) must declare exactly the 43
# functions of abi_functions.h (with cuFileDriverClose, which the header renames
# with a macro) and exactly the enumerators of abi_values.h: what the ABI dump
# checks must be all that the header has. The X-macros are read by expanding them.
set -u
export LC_ALL=C # one sort order wherever the lists were made
cc=$1 src=$2 list=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' '#include "abi_functions.h"' '#include "abi_values.h"' \
  '#define ABI_FN(name, ret, params) @function name' \
  '#define ABI_ENUMERATOR(type, name) @enumerator name' \
  'ABI_FUNCTIONS ABI_ENUMERATORS @function cuFileDriverClose' |
  "$cc" -E -P -x c -I "$src" - | tr '@' '\n' | sed -n 's/^\(function\|enumerator\) \([A-Za-z0-9_]*\).*/\1 \2/p' |
  sort -u >"$tmp/expected"
grep -E '^(function|enumerator) ' "$list" >"$tmp/declared"
if ! diff -u "$tmp/expected" "$tmp/declared"; then
  echo "FAIL: include/cufile.h (+) differs from the CUDA 13.0 API listed in tests/abi (-)"
  exit 1
fi
echo "ok: include/cufile.h declares the $(grep -c '^function ' "$list") functions and" \
  "$(grep -c '^enumerator ' "$list") enumerators of the CUDA 13.0 cuFile API"
