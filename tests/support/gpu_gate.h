// SPDX-License-Identifier: Apache-2.0
// Whether a skipped GPU test may pass as "skipped": only where this machine
// has no NVIDIA GPU, or UFILE_GPU_SKIPS_OK=1 says skips are expected there.
// The GPU is detected without CUDA (so without ufile's CUDA loader, which
// the tests check): a device node /dev/nvidia0 or nvidia-smi on PATH.
// tests/support/gpu_gate.sh and run_pytest.py decide the same way.
#pragma once

#include <string>

namespace ufile::test {

// What shows an NVIDIA GPU here ("/dev/nvidia0", nvidia-smi's path), or "".
std::string NvidiaGpuSign();

// Whether UFILE_GPU_SKIPS_OK is "1".
bool GpuSkipsAllowed();

// "" where a skip may stand; else why it is a failure.
std::string SkipIsFailure();

}  // namespace ufile::test
