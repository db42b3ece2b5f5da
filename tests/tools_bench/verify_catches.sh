#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# verify_catches.sh BENCH FILE: -V must fail, naming the damage, when three
# blocks of the pattern file are overwritten with zeros behind its back.
bench=$1
file=$2
rm -f "$file" "$file.ufile-bench"
"$bench" -f "$file" -s 16M -d -1 -q -x ufile -I read -V -n 1 > /dev/null || exit 1
dd if=/dev/zero of="$file" bs=4096 count=3 seek=1000 conv=notrunc status=none || exit 1
out=$("$bench" -f "$file" -s 16M -d -1 -q -x ufile -I read -V -n 1 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -eq 0 ]; then
  echo "verify_catches.sh: the damaged file passed" >&2
  exit 1
fi
printf '%s\n' "$out" | grep -Eq "bytes differ in \[4096000, 4108288\)" || {
  echo "verify_catches.sh: the failure does not name the damaged range" >&2
  exit 1
}
