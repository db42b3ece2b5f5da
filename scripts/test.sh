#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test suite (README command (b), what CI runs). Tests that need a GPU
# report "skipped" (with the reason) on machines without one.
#   scripts/test.sh          every stage below, in order (what CI runs)
#   scripts/test.sh quick    the plain build only
#   scripts/test.sh STAGE..  chosen stages: plain, address, thread, fuzz
# Stages: plain     every CTest test, RelWithDebInfo (build/)
#         address   the CPU suite under ASan+UBSan (build-asan/)
#         thread    the CPU suite under TSan (build-tsan/)
#         fuzz      the libFuzzer smoke (scripts/fuzz.sh, build-fuzz/)
# UFILE_SANITIZE=address|thread scripts/test.sh still runs that one stage.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
# liburing's kernel-shared rings are invisible to TSan (see tests/tsan.supp).
export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"

build() {  # dir sanitizer
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUFILE_SANITIZE="$2"
  cmake --build "$1" -j "$jobs"
}

stage() {
  local start=$SECONDS
  echo "=== stage $1"
  case "$1" in
    plain) build build ""
           ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900 ;;
    address|thread)
           build "build-${1:0:1}san" "$1"
           ctest --test-dir "build-${1:0:1}san" -L cpu --output-on-failure -j "$jobs" --timeout 1800 ;;
    fuzz)  scripts/fuzz.sh ;;
    *) echo "unknown stage '$1' (plain, address, thread, fuzz, quick)" >&2; exit 2 ;;
  esac
  echo "=== stage $1 passed in $((SECONDS - start)) s"
}

if [ -n "${UFILE_SANITIZE:-}" ]; then
  set -- "$UFILE_SANITIZE"
elif [ "$#" -eq 0 ]; then
  set -- plain address thread fuzz
elif [ "$1" = quick ]; then
  set -- plain
fi
for s in "$@"; do stage "$s"; done
