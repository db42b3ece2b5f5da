// SPDX-License-Identifier: Apache-2.0
// main() of the GPU test binaries: without a usable GPU the whole binary
// exits 77 (CTest's SKIP_RETURN_CODE) after saying why, so "no GPU" is
// reported as skipped, never as passed.
#include <gtest/gtest.h>

#include <cstdio>

#include "support/memory_kinds.h"

int main(int argc, char **argv) {
  if (!ufile::test::GpuAvailable()) {
    std::printf("SKIPPED: no usable GPU: %s\n", ufile::test::GpuUnavailableReason().c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
