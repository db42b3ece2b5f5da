// SPDX-License-Identifier: Apache-2.0
// The fixture of the device-initiated I/O GPU tests (devio_gpu_test,
// devio_ll_gpu_test): device buffers, and a queue set on the path the
// parameter names (the no-CPU path skips, with its reason, where it is not
// available). Needs the test kernels (UFILE_HAVE_TEST_KERNELS).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu/devio_fixture.h"
#include "gpu_kernels/devio_kernels.h"

namespace ufile::test {

namespace dk = devio_kernels;
using dk::Group;
using dk::Op;

inline const char *GroupName(Group g) {
  return g == Group::kThread ? "thread" : g == Group::kWarp ? "warp" : "block";
}

// Device buffers for a list of ops, freed at the end of the scope.
class DeviceBuffers {
 public:
  ~DeviceBuffers() {
    for (void *p : ptrs_) dk::DeviceFree(p);
  }
  // size bytes (+ slack), filled with 0xEE, or with data when given.
  char *Get(size_t size, const std::vector<uint8_t> *data = nullptr) {
    void *p = dk::DeviceAlloc(size + 64);
    EXPECT_NE(p, nullptr);
    if (!p) return nullptr;
    ptrs_.push_back(p);
    EXPECT_TRUE(dk::DeviceFill(p, 0xEE, size + 64));
    if (data) {
      EXPECT_TRUE(dk::CopyToDevice(p, data->data(), data->size()));
    }
    return static_cast<char *>(p);
  }

 private:
  std::vector<void *> ptrs_;
};

inline std::vector<uint8_t> Download(const char *p, size_t n) {
  std::vector<uint8_t> out(n);
  EXPECT_TRUE(dk::CopyFromDevice(out.data(), p, n));
  return out;
}

// A queue set on the path GetParam() names; tests derive their fixture.
class DevioQueueTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == UFILE_DEVIO_PATH_NOCPU && !NoCpuAvailable(&why))
      GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  }
  ufile_devio_params_t Params() {
    ufile_devio_params_t p;
    ufile_devio_params_init(&p);
    p.path = GetParam();
    p.num_queues = 4;
    p.queue_depth = 16;
    p.staging_bytes = 1 << 20;
    p.timeout_us = 20 * 1000 * 1000;
    p.sq_threads = 2;
    return p;
  }
  void Make(std::vector<CUfileHandle_t> hs, const ufile_devio_params_t &p) {
    ASSERT_EQ(q_.Create(hs.data(), static_cast<unsigned>(hs.size()), &p), 0);
    ASSERT_EQ(q_.path(), static_cast<int>(GetParam()));
    v_ = q_.view();
  }
  void Run(bool async, Group g, const std::vector<Op> &ops, std::vector<int64_t> *res) {
    std::string err;
    const int r = async ? dk::RunAsync(v_, g, ops, res, &err) : dk::RunSync(v_, g, ops, res, &err);
    ASSERT_EQ(r, 0) << err;
  }
  TempDir dir_;
  DeviceQueues q_;
  ufile_devio_view_t v_{};
};

}  // namespace ufile::test
