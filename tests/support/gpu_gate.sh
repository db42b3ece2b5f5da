#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Usage: gpu_gate.sh COMMAND [ARG]...
# Runs a GPU test's COMMAND. Its exit 77 (skipped) stays a skip only where
# this machine has no NVIDIA GPU (no /dev/nvidia0, no nvidia-smi on PATH:
# found without CUDA) or UFILE_GPU_SKIPS_OK=1; else it is a failure (exit 1).
# gpu_gate.h says the same for the GoogleTest binaries.
"$@"
rc=$?
[ "$rc" -eq 77 ] || exit "$rc"
sign=
if [ -e /dev/nvidia0 ]; then sign=/dev/nvidia0
elif smi=$(command -v nvidia-smi); then sign=$smi
fi
if [ -n "$sign" ] && [ "${UFILE_GPU_SKIPS_OK:-}" != 1 ]; then
  echo "FAILED: skipped, but this machine has an NVIDIA GPU ($sign), so a GPU test must run;" \
    "UFILE_GPU_SKIPS_OK=1 says skips are expected here"
  exit 1
fi
exit 77
