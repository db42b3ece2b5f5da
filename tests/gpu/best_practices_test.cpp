// SPDX-License-Identifier: Apache-2.0
// The I/O patterns of NVIDIA's GDS best-practices guide, each verifying data,
// plus the context rules: a pointer's own context is used whatever context
// (if any) is current in the calling thread.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "gpu/cuda_api.h"
#include "support/memory_kinds.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kChunk = 4u << 20;
constexpr int kLoops = 8;

class BestPractices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuAvailable()) GTEST_SKIP() << "no GPU: " << GpuUnavailableReason();
    path_ = dir_.File("data");
    data_ = RandomBytes(kChunk * kLoops, 42);
    WriteWholeFile(path_, data_);
    int flags = O_RDWR | (DirectIoSupported(dir_.path()) ? O_DIRECT : 0);
    fd_ = open(path_.c_str(), flags);
    ASSERT_GE(fd_, 0);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    mem_ = AllocateMemory(MemoryKind::kDevice, kChunk + 4096);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
  }
  // Reads chunk i at (file_extra, buf_off) and checks it.
  void ReadAndCheck(int i, off_t file_extra, off_t buf_off, size_t size = kChunk) {
    const off_t off = static_cast<off_t>(i) * kChunk + file_extra;
    ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), size, off, buf_off), static_cast<ssize_t>(size));
    std::vector<uint8_t> got = mem_->Download();
    ASSERT_EQ(0, memcmp(got.data() + buf_off, data_.data() + off, size)) << "chunk " << i;
  }

  TempDir dir_;
  std::string path_;
  std::vector<uint8_t> data_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  std::unique_ptr<TestMemory> mem_;
};

TEST_F(BestPractices, RegisterEveryIteration) {
  for (int i = 0; i < kLoops; ++i) {
    ASSERT_EQ(cuFileBufRegister(mem_->ptr(), kChunk, 0).err, CU_FILE_SUCCESS);
    ReadAndCheck(i, 0, 0);
    ASSERT_EQ(cuFileBufDeregister(mem_->ptr()).err, CU_FILE_SUCCESS);
  }
}

TEST_F(BestPractices, RegisterOnce) {
  ASSERT_EQ(cuFileBufRegister(mem_->ptr(), kChunk, 0).err, CU_FILE_SUCCESS);
  for (int i = 0; i < kLoops; ++i) ReadAndCheck(i, 0, 0);
  ASSERT_EQ(cuFileBufDeregister(mem_->ptr()).err, CU_FILE_SUCCESS);
}

TEST_F(BestPractices, NoRegistration) {
  for (int i = 0; i < kLoops; ++i) ReadAndCheck(i, 0, 0);
}

TEST_F(BestPractices, UnalignedFileOffset) {
  for (int i = 0; i + 1 < kLoops; ++i) ReadAndCheck(i, 1000 + i, 0, kChunk - 4096);
}

TEST_F(BestPractices, UnalignedBufferOffset) {
  for (int i = 0; i < kLoops; ++i) ReadAndCheck(i, 0, 100 + i, kChunk - 4096);
}

// Ten threads share one handle and one registered buffer, each at its own
// offsets in the file and in the buffer.
TEST_F(BestPractices, TenThreadsShareHandleAndBuffer) {
  constexpr int kThreads = 10;
  constexpr size_t kSlice = kChunk / kThreads / 4096 * 4096;
  ASSERT_EQ(cuFileBufRegister(mem_->ptr(), kChunk + 4096, 0).err, CU_FILE_SUCCESS);
  std::vector<std::thread> threads;
  std::vector<ssize_t> results(kThreads);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const off_t buf_off = static_cast<off_t>(t * kSlice);
      const off_t file_off = static_cast<off_t>((kThreads - 1 - t) * kSlice + 17);
      results[t] = cuFileRead(fh_, mem_->ptr(), kSlice, file_off, buf_off);
    });
  for (auto &th : threads) th.join();
  std::vector<uint8_t> got = mem_->Download();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(results[t], static_cast<ssize_t>(kSlice));
    const size_t file_off = (kThreads - 1 - t) * kSlice + 17;
    EXPECT_EQ(0, memcmp(got.data() + t * kSlice, data_.data() + file_off, kSlice)) << t;
  }
  ASSERT_EQ(cuFileBufDeregister(mem_->ptr()).err, CU_FILE_SUCCESS);
}

// A thread with no current context, and one with the context unset after
// allocation, still reach the allocation's own context.
TEST_F(BestPractices, NoCurrentContextInCallingThread) {
  ssize_t got = 0;
  std::thread([&] { got = cuFileRead(fh_, mem_->ptr(), kChunk, 0, 0); }).join();
  ASSERT_EQ(got, static_cast<ssize_t>(kChunk));
  std::vector<uint8_t> bytes = mem_->Download();
  EXPECT_EQ(0, memcmp(bytes.data(), data_.data(), kChunk));
  ASSERT_EQ(Cuda().cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuFileRead(fh_, mem_->ptr(), kChunk, kChunk, 0), static_cast<ssize_t>(kChunk));
}

// Every GPU of the process: a buffer on each device, read in one loop.
TEST_F(BestPractices, EveryGpu) {
  for (int dev = 0; dev < Cuda().device_count; ++dev) {
    std::unique_ptr<TestMemory> m = AllocateMemory(MemoryKind::kDevice, kChunk, dev);
    ASSERT_EQ(cuFileRead(fh_, m->ptr(), kChunk, 0, 0), static_cast<ssize_t>(kChunk));
    std::vector<uint8_t> bytes = m->Download();
    EXPECT_EQ(0, memcmp(bytes.data(), data_.data(), kChunk)) << "GPU " << dev;
  }
}

}  // namespace
}  // namespace ufile::test
