#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs, on a GPU machine and from the repository root, the checks of the tree
# scripts/build-for-device.sh built, carried there as build-dev/ or as the
# tarball build-dev.tgz (unpacked first):
#   scripts/check-on-device.sh STAGE...
#     gpu       every test labelled gpu but the multi-GPU ones; the drop-in
#               clients' test included (UFILE_TEST_DROPIN_ENV=1: it changes
#               this python3's site-packages while it runs, then restores it)
#     multigpu  the tests labelled multigpu (NCCL_NVLS_ENABLE=0)
#     cpu       the C++ CPU suite, 8 at a time (its CTest environment hides
#               the GPUs, as on CI)
# Each stage's ctest output, LastTest.log and summary (skips with reasons,
# GPU tests run, failures: tests/support/ctest_summary.sh) go to $OUT
# (default build-dev/device-logs). Exit 1 if a stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { sed -n 3,16p "$0"; exit 2; }
[ -d build-dev ] || tar xzf build-dev.tgz || exit 2
mkdir -p build-dev/tests/graph500/tmp build-dev/tests/tmp
out=$(realpath -m "${OUT:-build-dev/device-logs}")
mkdir -p "$out"
{ nvidia-smi -L; nproc; git log --oneline -1 2>/dev/null; } > "$out/machine.txt" 2>&1
export NCCL_NVLS_ENABLE=0 UFILE_TEST_DROPIN_ENV=1
failed=0
for stage in "$@"; do
  case $stage in
    gpu) args=(-L gpu -LE multigpu) ;;
    multigpu) args=(-L multigpu) ;;
    cpu) args=(-R '^cpu_' -E '^cpu_python_' -j 8) ;;
    *) echo "unknown stage '$stage' (gpu, multigpu, cpu)" >&2; exit 2 ;;
  esac
  t0=$(date +%s)
  (cd build-dev && ctest "${args[@]}" --output-on-failure) > "$out/$stage.log" 2>&1
  rc=$?
  echo "=== $stage: ctest exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$out/$stage.log"
  cp build-dev/Testing/Temporary/LastTest.log "$out/$stage-LastTest.log" 2>/dev/null
  sh tests/support/ctest_summary.sh "$out/$stage.log" build-dev | tee "$out/$stage-summary.txt"
  [ $rc -eq 0 ] || failed=1
done
exit $failed
