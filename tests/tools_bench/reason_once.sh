#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# reason_once.sh CMD ARGS...: runs ufile-bench; where it says why it measures
# host memory ("ufile-bench: REASON; measuring host-memory rows only"), no
# other line may repeat REASON, and with -j each row's JSON carries it as
# "memory_why". Passes when the runs exit 0.
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "reason_once.sh: exit status $rc" >&2; exit 1; }
reason=$(printf '%s\n' "$out" | sed -n 's/^ufile-bench: \(.*\); measuring host-memory rows only$/\1/p')
[ -n "$reason" ] || exit 0  # a GPU was used
n=$(printf '%s\n' "$out" | grep -cF -- "$reason")
if [ "$n" -ne 1 ]; then
  echo "reason_once.sh: '$reason' printed $n times" >&2
  exit 1
fi
json=$("$@" -j 2>/dev/null) || { echo "reason_once.sh: -j failed" >&2; exit 1; }
if printf '%s\n' "$json" | grep -vqF -- "\"memory_why\":\"$reason\""; then
  echo "reason_once.sh: a JSON row lacks \"memory_why\":\"$reason\"" >&2
  exit 1
fi
