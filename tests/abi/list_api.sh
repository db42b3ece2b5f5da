#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: list_api.sh [-o OUT] CC [compiler flags...]
# Prints, sorted, the names that <cufile.h> (found with the given flags) gives:
#   function NAME     every cuFile* function declared
#   enumerator NAME   every enumerator of every enum
#   macro NAME        every macro named CU_FILE*, CUFILE*, IS_CU*, cuFile*
# Read from the preprocessor's output, so names count as the compiler sees
# them (cuFileDriverClose and, through the header's macro, cuFileDriverClose_v2).
set -eu
export LC_ALL=C # one sort order wherever the lists were made
if [ "${1:-}" = -o ]; then
  out=$2
  shift 2
  sh "$0" "$@" >"$out.tmp" && mv "$out.tmp" "$out"
  exit
fi
cc=$1
shift
tu='#include <cufile.h>'
body=$(printf '%s\n' "$tu" | "$cc" -E -x c "$@" - |
  awk '/^# [0-9]+ "/ { f = $3; gsub(/"/, "", f); in_h = (f ~ /(^|\/)cufile\.h$/); next }
       in_h { print }')
{
  printf '%s\n' "$body" | grep -oE '(^|[^A-Za-z0-9_])cuFile[A-Za-z0-9_]*[[:space:]]*\(' |
    sed -E 's/^[^c]*//; s/[[:space:]]*\($//; s/^/function /'
  # Enum bodies hold no braces: take the first name of each comma-separated item.
  printf '%s\n' "$body" | tr '\n' ' ' | grep -oE '\benum[[:space:]]+[A-Za-z0-9_]*[[:space:]]*\{[^}]*\}' |
    sed -E 's/^[^{]*\{//; s/\}$//' | tr ',' '\n' |
    sed -nE 's/^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*).*/enumerator \1/p'
  printf '%s\n' "$tu" | "$cc" -dM -E -x c "$@" - |
    sed -nE 's/^#define ((CU_?FILE|IS_CU|cuFile)[A-Za-z0-9_]*).*/macro \1/p'
} | sort -u
