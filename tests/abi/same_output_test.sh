#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: same_output_test.sh PROGRAM_A PROGRAM_B
# The two programs must print the same thing (here: the ABI dump with cuda.h
# and with the header's fallback types must not differ).
set -u
a=$("$1") || { echo "FAIL: $1 failed"; exit 1; }
b=$("$2") || { echo "FAIL: $2 failed"; exit 1; }
if [ "$a" != "$b" ]; then
  echo "FAIL: outputs differ (- $1, + $2)"
  printf '%s\n' "$a" >"${TMPDIR:-/tmp}/ufile_abi_a.$$"
  printf '%s\n' "$b" | diff -u "${TMPDIR:-/tmp}/ufile_abi_a.$$" -
  rm -f "${TMPDIR:-/tmp}/ufile_abi_a.$$"
  exit 1
fi
echo "ok: $(printf '%s\n' "$a" | wc -l) lines identical"
