// SPDX-License-Identifier: Apache-2.0
// A driver whose cuInit fails (a GPU machine with its GPUs hidden,
// CUDA_VISIBLE_DEVICES=): the first use of the CUDA table returns, says why,
// and the library runs without a GPU. CTest runs this binary with the
// stand-in libcuda.so.1 of stand_in/ first on LD_LIBRARY_PATH; without it,
// it skips.
#include <cufile.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "gpu/cuda_api.h"
#include "support/watchdog.h"

namespace ufile {
namespace {

bool StandInLoaded() {
  const char *path = std::getenv("UFILE_TEST_STAND_IN_LIBCUDA");
  return path != nullptr && *path != '\0';
}

TEST(CudaNoDevice, FirstUseReturnsAndSaysWhy) {
  if (!StandInLoaded()) GTEST_SKIP() << "UFILE_TEST_STAND_IN_LIBCUDA unset: run through CTest";
  test::Watchdog dog(std::chrono::seconds(20), "the first Cuda() with a failing cuInit");
  const CudaApi &api = Cuda();
  EXPECT_TRUE(api.loaded);
  EXPECT_FALSE(api.available);
  EXPECT_EQ(api.why_unavailable,
            "cuInit failed: 100 (stand-in: no CUDA-capable device is detected)");
}

TEST(CudaNoDevice, DriverOpensWithoutAGpu) {
  if (!StandInLoaded()) GTEST_SKIP() << "UFILE_TEST_STAND_IN_LIBCUDA unset: run through CTest";
  test::Watchdog dog(std::chrono::seconds(20), "cuFileDriverOpen with a failing cuInit");
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
}

}  // namespace
}  // namespace ufile
