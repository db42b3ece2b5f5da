// SPDX-License-Identifier: Apache-2.0
// Shared by the GPU stream and batch tests: a context, two streams, device
// memory, a registered file of random data, and pinned host-mapped memory
// for gates (a stream waits on a word until the host releases it: work
// before an operation that the test controls), parameters and results.
#pragma once

#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "async/flag_pool.h"
#include "async/stream_watcher.h"
#include "gpu/cuda_api.h"
#include "support/test_util.h"

#define CU_OK(expr) ASSERT_EQ((expr), CUDA_SUCCESS) << #expr

namespace ufile::test {

// Lives in pinned, device-mapped host memory.
struct Shared {
  uint32_t gate[8];
  size_t size;
  off_t file_off;
  off_t buf_off;
  ssize_t bytes;
  ssize_t seen;  // what a kernel read of bytes
  ssize_t bytes2;
};

class StreamFixture : public ::testing::Test {
 protected:
  static constexpr size_t kFile = 32u << 20;
  static constexpr size_t kDev = 32u << 20;

  void SetUp() override {
    CudaApi &api = Cuda();
    ASSERT_TRUE(api.available) << api.why_unavailable;
    CU_OK(api.cuDevicePrimaryCtxRetain(&ctx_, 0));
    CU_OK(api.cuCtxSetCurrent(ctx_));
    CU_OK(api.cuStreamCreate(&s1_, CU_STREAM_NON_BLOCKING));
    CU_OK(api.cuStreamCreate(&s2_, CU_STREAM_NON_BLOCKING));
    CU_OK(api.cuMemAlloc(&dev_, kDev));
    CU_OK(api.cuMemsetD8(dev_, 0, kDev));
    CU_OK(api.cuStreamSynchronize(nullptr));  // memsets are asynchronous
    void *h = nullptr;
    CU_OK(api.cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    sh_ = new (h) Shared{};
    data_ = RandomBytes(kFile, 77);
    fh_ = OpenFile("data", data_, &fd_);
  }
  void TearDown() override {
    CudaApi &api = Cuda();
    for (CUstream s : {s1_, s2_}) {
      if (!s) continue;
      api.cuStreamSynchronize(s);
      api.cuStreamDestroy(s);
    }
    EXPECT_TRUE(Quiet()) << "operations not retired";
    for (CUfileHandle_t fh : handles_) cuFileHandleDeregister(fh);
    for (int fd : fds_) close(fd);
    if (dev_) api.cuMemFree(dev_);
    if (sh_) api.cuMemFreeHost(sh_);
    if (ctx_) api.cuDevicePrimaryCtxRelease(0);
  }

  CUfileHandle_t OpenFile(const std::string &name, const std::vector<uint8_t> &bytes,
                          int *fd_out = nullptr) {
    const std::string path = dir_.File(name);
    WriteWholeFile(path, bytes);
    const int fd = open(path.c_str(), O_RDWR);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    CUfileHandle_t fh = nullptr;
    EXPECT_EQ(RegisterFd(fd, &fh), CU_FILE_SUCCESS);
    handles_.push_back(fh);
    if (fd_out) *fd_out = fd;
    return fh;
  }

  // The stream stops here until Release(i).
  void Block(CUstream s, int i) {
    std::atomic_ref<uint32_t>(sh_->gate[i]).store(0);
    ASSERT_EQ(Cuda().cuStreamWaitValue32(s, reinterpret_cast<CUdeviceptr>(&sh_->gate[i]), 1,
                                         CU_STREAM_WAIT_VALUE_EQ),
              CUDA_SUCCESS);
  }
  void Release(int i) { std::atomic_ref<uint32_t>(sh_->gate[i]).store(1); }

  std::vector<uint8_t> Download(size_t off, size_t n) {
    std::vector<uint8_t> out(n);
    EXPECT_EQ(Cuda().cuMemcpyDtoH(out.data(), dev_ + off, n), CUDA_SUCCESS);
    return out;
  }
  // Whether dev_[buf_off, + n) holds the file's [file_off, + n).
  bool DeviceHoldsFile(size_t buf_off, size_t file_off, size_t n) {
    std::vector<uint8_t> got = Download(buf_off, n);
    return memcmp(got.data(), data_.data() + file_off, n) == 0;
  }

  // Every stream operation retired: ufile's watcher lets go of one shortly
  // after its stream has passed it.
  static bool Quiet() {
    for (int i = 0; i < 1000; ++i) {
      if (FlagPool::Get().in_use() == 0 && StreamWatcher::Get().watched() == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  TempDir dir_;
  CUcontext ctx_ = nullptr;
  CUstream s1_ = nullptr, s2_ = nullptr;
  CUdeviceptr dev_ = 0;
  Shared *sh_ = nullptr;
  std::vector<uint8_t> data_;
  CUfileHandle_t fh_ = nullptr;
  int fd_ = -1;
  std::vector<int> fds_;
  std::vector<CUfileHandle_t> handles_;
};

}  // namespace ufile::test
