#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test suite: configure, build, run every CTest test. Tests that need a
# GPU report "skipped" (with the reason) on machines without one.
#   scripts/test.sh            the suite (what CI runs)
#   UFILE_SANITIZE=address scripts/test.sh   the same under ASan+UBSan (build-asan/)
#   UFILE_SANITIZE=thread  scripts/test.sh   the same under TSan (build-tsan/)
set -euo pipefail
cd "$(dirname "$0")/.."
san="${UFILE_SANITIZE:-}"
dir="build${san:+-${san:0:1}san}"
jobs="$(nproc)"
# liburing's kernel-shared rings are invisible to TSan (see tests/tsan.supp).
export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp ${TSAN_OPTIONS:-}"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUFILE_SANITIZE="$san"
cmake --build "$dir" -j "$jobs"
ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900
