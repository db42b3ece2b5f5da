#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test suite (README command (b), what CI runs). Tests that need a GPU
# report "skipped" on machines without one; after each ctest run every
# skipped test is listed with its reason, and the count of GPU tests that
# ran. On a machine with an NVIDIA GPU a GPU test's skip fails, unless
# UFILE_GPU_SKIPS_OK=1 (tests/support/gpu_gate.h).
#   scripts/test.sh          lean, address, thread (what CI runs)
#   scripts/test.sh quick    the plain build only
#   scripts/test.sh STAGE..  chosen stages: plain, lean, address, thread, gpu, fuzz
# Stages: plain     every CTest test, RelWithDebInfo (build/)
#         lean      plain without the CPU suite, which the next two stages
#                   build and run instrumented (2 cores: plain 637 s, lean
#                   359 s)
#         address   the CPU suite under ASan+UBSan (build-asan/)
#         thread    the CPU suite under TSan (build-tsan/)
#         gpu       the tests labelled gpu of the plain build (GPU machine)
#         fuzz      the libFuzzer run of scripts/fuzz.sh (build-fuzz/), not
#                   in the default stages: run it on its own (docs/FUZZING.md)
# The CPU suite is the GoogleTest binaries of tests/cpu (and the ufile-check
# and ufile-stats they run); the sanitizer stages build only those targets,
# at -O1 with line tables: no tools, bench, examples or CUDA objects.
# UFILE_SANITIZE=address|thread scripts/test.sh still runs that one stage.
# UFILE_BUILD_DIR (default build) names the plain build directory; the
# sanitizer stages use it with -asan and -tsan appended.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
dir="${UFILE_BUILD_DIR:-build}"
# TSan does not model the device-I/O protocol's fences (see tests/tsan.supp).
export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"

cpu_targets() {
  local f
  for f in tests/cpu/*_test.cpp; do f=${f##*/}; echo "cpu_${f%.cpp}"; done
}

# ctest with its arguments in build dir $1, then the skipped tests' reasons
# and the GPU count (tests/support/ctest_summary.sh); ctest's exit status.
run_ctest() {
  local dir=$1 rc=0
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" | tee "$dir/ctest-console.txt" ||
    rc=$?
  sh tests/support/ctest_summary.sh "$dir/ctest-console.txt" "$dir"
  return "$rc"
}

# The sanitizers find the same faults at -O1, which compiles faster than
# -O2 -g (and TSan at -O2 ran the I/O matrix no faster).
sanitized() {  # dir sanitizer
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUFILE_SANITIZE="$2" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  # shellcheck disable=SC2046
  cmake --build "$1" -j "$jobs" --target $(cpu_targets)
  run_ctest "$1" -R '^cpu_' -E '^cpu_python_' --timeout 1800
}

stage() {
  local start=$SECONDS
  echo "=== stage $1"
  case "$1" in
    plain|lean)
           cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
             -DUFILE_CPU_GTESTS="$([ "$1" = lean ] && echo OFF || echo ON)"
           cmake --build "$dir" -j "$jobs"
           run_ctest "$dir" --timeout 900 ;;
    gpu)   cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUFILE_CPU_GTESTS=ON
           cmake --build "$dir" -j "$jobs"
           run_ctest "$dir" -L gpu --timeout 900 ;;
    address|thread) sanitized "$dir-${1:0:1}san" "$1" ;;
    fuzz)  scripts/fuzz.sh ;;
    *) echo "unknown stage '$1' (plain, lean, address, thread, gpu, fuzz, quick)" >&2; exit 2 ;;
  esac
  echo "=== stage $1 passed in $((SECONDS - start)) s"
}

if [ -n "${UFILE_SANITIZE:-}" ]; then
  set -- "$UFILE_SANITIZE"
elif [ "$#" -eq 0 ]; then
  set -- lean address thread
elif [ "$1" = quick ]; then
  set -- plain
fi
for s in "$@"; do stage "$s"; done
