#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run_bench.sh EXPECT_REGEX CMD ARGS...: runs ufile-bench, shows its output,
# and passes only when it exits 0 and prints a line matching EXPECT_REGEX.
expect=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "run_bench.sh: exit status $rc" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$expect"; then
  echo "run_bench.sh: no line matches '$expect'" >&2
  exit 1
fi
