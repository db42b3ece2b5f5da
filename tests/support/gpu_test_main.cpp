// SPDX-License-Identifier: Apache-2.0
// main() of the GPU test binaries. Without a usable GPU the binary exits 77
// (CTest's SKIP_RETURN_CODE) after saying why, so "no GPU" reads as skipped,
// never as passed; on a machine with an NVIDIA GPU (gpu_gate.h) that skip,
// and any test skipped inside, fails instead. The last line counts the tests
// that ran, were skipped and failed.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "support/gpu_gate.h"
#include "support/memory_kinds.h"

int main(int argc, char **argv) {
  const std::string strict = ufile::test::SkipIsFailure();
  if (!ufile::test::GpuAvailable()) {
    std::printf("SKIPPED: no usable GPU: %s\n", ufile::test::GpuUnavailableReason().c_str());
    std::printf("GPU tests: 0 ran (the binary skipped)\n");
    if (strict.empty()) return 77;
    std::printf("FAILED: %s\n", strict.c_str());
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest &u = *::testing::UnitTest::GetInstance();
  const int skipped = u.skipped_test_count();
  std::printf("GPU tests: %d ran, %d skipped, %d failed\n", u.test_to_run_count() - skipped,
              skipped, u.failed_test_count());
  if (rc == 0 && skipped > 0 && !strict.empty()) {
    std::printf("FAILED: %d skipped: %s\n", skipped, strict.c_str());
    return 1;
  }
  return rc;
}
