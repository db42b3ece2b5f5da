#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# expect_output.sh STATUS WANT UNWANTED CMD ARGS...: runs CMD, shows its
# output, and passes only when its exit status is STATUS ("nonzero": any but
# 0), a line matches the regex WANT and none matches UNWANTED ("" for none).
status=$1 want=$2 unwanted=$3
shift 3
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$status" = nonzero ] && [ "$rc" -eq 0 ] || [ "$status" != nonzero ] && [ "$rc" -ne "$status" ]; then
  echo "expect_output.sh: exit status $rc, want $status" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$want"; then
  echo "expect_output.sh: no line matches '$want'" >&2
  exit 1
fi
if [ -n "$unwanted" ] && printf '%s\n' "$out" | grep -Eq -- "$unwanted"; then
  echo "expect_output.sh: a line matches '$unwanted'" >&2
  exit 1
fi
exit 0
