#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: gating_test.sh GATING_PROBE TESTS_DIR PYTHON WORKDIR
# A GPU test's skip is a failure where an NVIDIA GPU is present, unless
# UFILE_GPU_SKIPS_OK=1: checked for the GoogleTest main (GATING_PROBE), for
# gpu_gate.sh and for run_pytest.py --gpu, with a GPU faked by an nvidia-smi
# on PATH. Also: run_pytest.py without --gpu and pip_install_test.sh fail,
# not skip, when what CI installs is missing; ctest_summary.sh prints each
# skipped test's reason and the GPU count; ctest_needs.sh leaves the build's
# test log alone.
set -u
probe=$1 tests=$2 py=$3 work=$4
rm -rf "$work" && mkdir -p "$work/bin" || exit 1
printf '#!/bin/sh\nexit 0\n' >"$work/bin/nvidia-smi" && chmod +x "$work/bin/nvidia-smi"
printf 'import pytest\n\ndef test_skips():\n    pytest.skip("a skip the gating must see")\n' \
  >"$work/skip_test.py"
fails=0
real=
{ [ -e /dev/nvidia0 ] || command -v nvidia-smi >/dev/null; } && real=yes
unset UFILE_GPU_SKIPS_OK

expect() {  # what rcs... -- command...: the command's exit code is one of rcs
  what=$1; shift
  want=
  while [ "$1" != -- ]; do want="$want $1"; shift; done
  shift
  "$@" >"$work/out" 2>&1
  rc=$?
  for w in $want; do
    [ "$rc" = "$w" ] && { echo "ok: $what (exit $rc)"; return 0; }
  done
  echo "FAILED: $what: exit $rc, want one of$want; its output:"
  sed 's/^/  | /' "$work/out"
  fails=$((fails + 1))
}
said() {  # text: the last command printed it
  grep -q -- "$1" "$work/out" || { echo "FAILED: no '$1' in the output"; fails=$((fails + 1)); }
}
fake() { env PATH="$work/bin:$PATH" "$@"; }
fake_ok() { env UFILE_GPU_SKIPS_OK=1 PATH="$work/bin:$PATH" "$@"; }

# The GoogleTest main: the whole binary skips without a usable GPU, one test
# skips with one.
if [ -z "$real" ]; then
  expect "no GPU: the GPU binary skips" 77 -- "$probe"
  said "SKIPPED: no usable GPU"
fi
expect "a GPU present: the GPU binary's skip fails" 1 -- fake "$probe"
said "FAILED: .*NVIDIA GPU ($work/bin/nvidia-smi)"
said "GPU tests: "
expect "a GPU present, skips expected: it skips" 77 0 -- fake_ok "$probe"

# gpu_gate.sh around a script's exit 77; other exit codes pass through.
gate="$tests/support/gpu_gate.sh"
[ -z "$real" ] && expect "no GPU: gpu_gate.sh keeps the skip" 77 -- sh "$gate" sh -c 'exit 77'
expect "a GPU present: gpu_gate.sh fails the skip" 1 -- fake sh "$gate" sh -c 'exit 77'
said "FAILED: skipped, but this machine has an NVIDIA GPU"
expect "a GPU present, skips expected: gpu_gate.sh skips" 77 -- fake_ok sh "$gate" sh -c 'exit 77'
expect "gpu_gate.sh passes a pass" 0 -- fake sh "$gate" true
expect "gpu_gate.sh passes a failure" 3 -- fake sh "$gate" sh -c 'exit 3'

# run_pytest.py: --gpu skips (a module missing, or pytest's own skip).
runner="$tests/python/run_pytest.py"
[ -z "$real" ] && expect "no GPU: a GPU pytest file skips" 77 0 -- \
  "$py" "$runner" --gpu --need no_such_module "$work/skip_test.py"
expect "a GPU present: a GPU pytest file's skip fails" 1 -- \
  fake "$py" "$runner" --gpu --need no_such_module "$work/skip_test.py"
said "FAILED: this machine has an NVIDIA GPU"
expect "a GPU present, skips expected: it skips" 77 -- \
  fake_ok "$py" "$runner" --gpu --need no_such_module "$work/skip_test.py"
# pytest's own skips are counted (a GPU file's then fail as above, where
# torch sees a GPU).
expect "CPU tests: pytest's skip is a skip, counted" 0 -- "$py" "$runner" "$work/skip_test.py"
said "tests: 0 ran, 1 skipped, 0 failed"
expect "CPU tests: a module CI installs, missing, fails" 1 -- \
  "$py" "$runner" --need no_such_module "$work/skip_test.py"
said "FAILED: no_such_module not importable"

# pip_install_test.sh without venv fails.
printf '#!/bin/sh\necho "No module named venv" >&2\nexit 1\n' >"$work/bin/novenv-python"
chmod +x "$work/bin/novenv-python"
expect "pip_install_test.sh without venv fails" 1 -- \
  bash "$tests/python/pip_install_test.sh" "$work/bin/novenv-python" /nonexistent /nonexistent \
  "$work/pip"
said "FAILED: .* -m venv failed"

# ctest_summary.sh: a skipped test's reason and the GPU count.
mkdir -p "$work/build/Testing/Temporary"
cat >"$work/build/Testing/Temporary/LastTest.log" <<'LOG'
1/2 Testing: gpu_a
1/2 Test: gpu_a
Output:
----------------------------------------------------------
[  SKIPPED ] A.B
GPU tests: 3 ran, 1 skipped, 0 failed
<end of output>
2/2 Testing: gpu_b
2/2 Test: gpu_b
Output:
----------------------------------------------------------
SKIPPED: no usable GPU: a reason
GPU tests: 0 ran (the binary skipped)
<end of output>
LOG
printf '1/2 Test #1: gpu_a ....   Passed\n2/2 Test #2: gpu_b ....***Skipped   0.00 sec\n' \
  >"$work/console"
expect "ctest_summary.sh runs" 0 -- \
  sh "$tests/support/ctest_summary.sh" "$work/console" "$work/build"
said "^  gpu_b$"
said "^    SKIPPED: no usable GPU: a reason$"
said "GPU tests: 3 ran, 1 skipped, 0 failed; of 2 GPU binaries and files, 1 skipped whole"

# ctest_needs.sh (run by the suite while it runs) leaves the build's
# LastTest.log, which ctest_summary.sh reads afterwards, as it was.
cat >"$work/build/CTestTestfile.cmake" <<'LIST'
add_test(a_build "true")
set_tests_properties(a_build PROPERTIES FIXTURES_SETUP built)
add_test(a_run "true")
set_tests_properties(a_run PROPERTIES FIXTURES_REQUIRED built)
LIST
cp "$work/build/Testing/Temporary/LastTest.log" "$work/lasttest"
expect "ctest_needs.sh finds a fixture's set-up" 0 -- \
  sh "$tests/support/ctest_needs.sh" "$work/build" a_run a_build
expect "ctest_needs.sh reports a test not selected" 1 -- \
  sh "$tests/support/ctest_needs.sh" "$work/build" a_build a_run
expect "ctest_needs.sh leaves LastTest.log as it was" 0 -- \
  cmp "$work/lasttest" "$work/build/Testing/Temporary/LastTest.log"

[ "$fails" -eq 0 ] && echo "gating: all checks passed" || echo "gating: $fails checks failed"
[ "$fails" -eq 0 ]
