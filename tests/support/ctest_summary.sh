#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: ctest_summary.sh CTEST_CONSOLE_OUTPUT BUILD_DIR
# After a ctest run (its console output saved to a file): each skipped test
# with its reason (the SKIPPED/skipped lines it printed, from
# BUILD_DIR/Testing/Temporary/LastTest.log), then how many GPU tests ran,
# summed from the "GPU tests: N ran, M skipped, K failed" lines the GPU
# binaries and run_pytest.py --gpu print; then the tests ctest saw fail (a
# test that fails before printing its count is missing from that sum).
set -u
console=$1 log=$2/Testing/Temporary/LastTest.log
[ -f "$log" ] || { echo "no $log: ctest did not run"; exit 0; }
awk -v console="$console" '
  BEGIN {
    while ((getline line < console) > 0)
      if (line ~ /\*\*\*Skipped/ && match(line, /Test +#[0-9]+: [^ ]+/)) {
        name = substr(line, RSTART, RLENGTH); sub(/Test +#[0-9]+: /, "", name)
        skipped[name] = 1; order[++n] = name
      } else if (line ~ /\*\*\*(Failed|Timeout|Exception)/ &&
                 match(line, /Test +#[0-9]+: [^ ]+/)) {
        name = substr(line, RSTART, RLENGTH); sub(/Test +#[0-9]+: /, "", name)
        failed = failed " " name
      }
  }
  /^[0-9]+\/[0-9]+ Test: / { test = $3; inout = 0; next }
  /^Output:/ { inout = 1; next }
  /^<end of output>/ { inout = 0; next }
  inout && (test in skipped) && /SKIPPED|[Ss]kipped:|GTEST_SKIP|^ *\[  SKIPPED \]/ {
    if (nreason[test]++ < 4) reason[test] = reason[test] "\n    " $0
  }
  inout && /^GPU tests: / {
    if (match($0, /[0-9]+ ran/)) ran += substr($0, RSTART, RLENGTH - 4)
    if (match($0, /[0-9]+ skipped/)) skip += substr($0, RSTART, RLENGTH - 8)
    if (match($0, /[0-9]+ failed/)) fail += substr($0, RSTART, RLENGTH - 7)
    if ($0 ~ /skipped\)$/) whole++
    runs++
  }
  END {
    if (n) print "Skipped tests and why:"
    for (i = 1; i <= n; i++)
      print "  " order[i] ((order[i] in reason) ? reason[order[i]] : "\n    (no reason printed)")
    if (runs)
      printf "GPU tests: %d ran, %d skipped, %d failed; of %d GPU binaries and files, " \
        "%d skipped whole\n", ran, skip, fail, runs, whole
    if (failed != "") print "Failed tests (ctest):" failed
  }' "$log"
