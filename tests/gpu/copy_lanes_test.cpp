// SPDX-License-Identifier: Apache-2.0
// Copy lanes are reused across threads: a lane parked by a thread that has
// exited serves the next thread's lease, so short-lived threads (stream
// executors) never make ufile create CUDA streams again, and the number of
// lanes is the most leased at once.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "gpu/copy_lanes.h"
#include "gpu/cuda_api.h"
#include "support/memory_kinds.h"

namespace ufile::test {
namespace {

class CopyLanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuAvailable()) GTEST_SKIP() << "no GPU: " << GpuUnavailableReason();
    CudaApi &api = Cuda();
    CUdevice dev = 0;
    ASSERT_EQ(api.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&ctx_, dev), CUDA_SUCCESS);
    dev_ = dev;
  }
  void TearDown() override {
    if (!ctx_) return;
    lanes_.ReleaseAll();
    Cuda().cuDevicePrimaryCtxRelease(dev_);
  }
  // Leases n lanes at once on a fresh thread and returns them; their streams.
  std::vector<CUstream> LeaseOnNewThread(size_t n) {
    std::vector<CUstream> streams;
    std::thread([&] {
      std::vector<LaneLease> held;
      for (size_t i = 0; i < n; ++i) {
        Result<LaneLease> l = lanes_.Lease(ctx_);
        ASSERT_TRUE(l.ok());
        streams.push_back((*l)->stream);
        held.push_back(std::move(*l));
      }
    }).join();
    return streams;
  }

  CopyLanes lanes_;
  CUcontext ctx_ = nullptr;
  CUdevice dev_ = 0;
};

TEST_F(CopyLanesTest, ALaneParkedByAnExitedThreadServesTheNext) {
  const std::vector<CUstream> first = LeaseOnNewThread(1);
  ASSERT_EQ(first.size(), 1u);
  for (int t = 0; t < 100; ++t) {  // more threads than slots
    const std::vector<CUstream> next = LeaseOnNewThread(1);
    ASSERT_EQ(next.size(), 1u);
    EXPECT_EQ(next[0], first[0]) << "thread " << t;
  }
  EXPECT_EQ(lanes_.created(ctx_), 1u);
}

TEST_F(CopyLanesTest, LanesAreTheMostLeasedAtOnce) {
  LeaseOnNewThread(4);
  EXPECT_EQ(lanes_.created(ctx_), 4u);
  for (int t = 0; t < 20; ++t) LeaseOnNewThread(1 + t % 4);
  EXPECT_EQ(lanes_.created(ctx_), 4u);
  LeaseOnNewThread(6);
  EXPECT_EQ(lanes_.created(ctx_), 6u);
}

}  // namespace
}  // namespace ufile::test
