#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Checks that selecting one test (ctest -R, as any label selection would)
# also selects the tests it needs, through CTest fixtures: a test that reads
# what another builds must not depend on the order of a full run.
#   ctest_needs.sh BUILD_DIR TEST NEEDED_TEST...
set -eu
build=$1 test=$2
shift 2
# ctest -N on a copy of the test lists: in BUILD_DIR itself it would rewrite
# Testing/Temporary/LastTest.log while the suite runs, whose skip reasons
# ctest_summary.sh reads afterwards.
lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT
(cd "$build" && find . -name CTestTestfile.cmake) | while read -r f; do
  mkdir -p "$lists/${f%/*}" && cp "$build/$f" "$lists/$f"
done
listed=$(ctest --test-dir "$lists" -N -R "^$test\$") || { echo "ctest -N failed"; exit 1; }
rc=0
for need in "$@"; do
  if ! printf '%s\n' "$listed" | grep -q "Test *#[0-9]*: $need\$"; then
    echo "ctest -R ^$test\$ does not select $need, which it needs (FIXTURES_REQUIRED)"
    rc=1
  fi
done
[ "$rc" -ne 0 ] || echo "ctest -R ^$test\$ selects $*"
exit "$rc"
