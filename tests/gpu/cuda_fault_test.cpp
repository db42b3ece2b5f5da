// SPDX-License-Identifier: Apache-2.0
// CUDA failures injected through the CUDA seam (one entry of the CudaApi
// table replaced): a failed staging copy ends the request with
// -CU_FILE_CUDA_DRIVER_ERROR, touches nothing outside the request, and
// leaves the library usable (no leaked staging buffer or copy lane). Pinned
// staging that cannot be allocated falls back to unpinned memory; with no
// memory at all, requests fail with -CU_FILE_NOMEM_ERROR.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "gpu/cuda_api.h"
#include "gpu/staging_pool.h"
#include "support/memory_kinds.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kSize = 64u << 20;  // many chunks
std::atomic<int> g_calls{0};
std::atomic<int> g_fail_at{0};

decltype(CudaApi::cuMemcpyHtoDAsync) g_real_htod = nullptr;
decltype(CudaApi::cuMemcpyDtoHAsync) g_real_dtoh = nullptr;

CUresult FailingHtoD(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  if (++g_calls == g_fail_at) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return g_real_htod(dst, src, n, s);
}
CUresult FailingDtoH(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  if (++g_calls == g_fail_at) return CUDA_ERROR_LAUNCH_FAILED;
  return g_real_dtoh(dst, src, n, s);
}

std::atomic<int> g_pin_calls{0};
CUresult FailingHostAlloc(void **, size_t, unsigned) {
  ++g_pin_calls;
  return CUDA_ERROR_OUT_OF_MEMORY;
}
int FailingStagingAlloc(void **, size_t, size_t) { return ENOMEM; }

class CudaFault : public ::testing::Test {
 protected:
  void SetUp() override {
    g_real_htod = Cuda().cuMemcpyHtoDAsync;
    g_real_dtoh = Cuda().cuMemcpyDtoHAsync;
    g_calls = 0;
    path_ = dir_.File("f");
    data_ = RandomBytes(kSize, 3);
    WriteWholeFile(path_, data_);
    fd_ = open(path_.c_str(), O_RDWR);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    mem_ = AllocateMemory(MemoryKind::kDevice, kSize + 8192);
  }
  void TearDown() override {
    cuFileHandleDeregister(fh_);
    close(fd_);
  }
  TempDir dir_;
  std::string path_;
  std::vector<uint8_t> data_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  std::unique_ptr<TestMemory> mem_;
};

TEST_F(CudaFault, HostToDeviceCopyFailsAtChunkK) {
  for (int k : {1, 5, 9}) {
    std::vector<uint8_t> sentinel = RandomBytes(kSize + 8192, 100 + k);
    mem_->Upload(sentinel);
    g_calls = 0;
    g_fail_at = k;
    {
      ScopedCudaOverride o(&CudaApi::cuMemcpyHtoDAsync, &FailingHtoD);
      EXPECT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 4096),
                -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR))
          << "k=" << k;
    }
    std::vector<uint8_t> got = mem_->Download();
    EXPECT_EQ(0, memcmp(got.data(), sentinel.data(), 4096)) << "head of the buffer changed";
    EXPECT_EQ(0, memcmp(got.data() + 4096 + kSize, sentinel.data() + 4096 + kSize, 4096))
        << "tail of the buffer changed";
  }
  // The library is still whole: the same read now succeeds, byte-exact.
  ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  std::vector<uint8_t> got = mem_->Download();
  EXPECT_EQ(0, memcmp(got.data(), data_.data(), kSize));
}

TEST_F(CudaFault, DeviceToHostCopyFailsAtChunkK) {
  mem_->Upload(RandomBytes(kSize + 8192, 77));
  for (int k : {1, 4}) {
    g_calls = 0;
    g_fail_at = k;
    ScopedCudaOverride o(&CudaApi::cuMemcpyDtoHAsync, &FailingDtoH);
    EXPECT_EQ(cuFileWrite(fh_, mem_->ptr(), kSize, 8192, 0),
              -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR))
        << "k=" << k;
  }
  // Bytes outside the request are untouched; the file grew at most to the
  // request's end (other chunks of the failed request may have been written).
  std::vector<uint8_t> file = ReadWholeFile(path_);
  ASSERT_GE(file.size(), kSize);
  ASSERT_LE(file.size(), kSize + 8192);
  EXPECT_EQ(0, memcmp(file.data(), data_.data(), 8192));
  ASSERT_EQ(cuFileWrite(fh_, mem_->ptr(), 4096, 0, 0), 4096);
}

// The staging pool allocates on first demand and keeps its buffers until
// close, so each case starts a fresh session with the allocator failing.
TEST_F(CudaFault, PinnedStagingFailsAndUnpinnedMemoryServes) {
  cuFileHandleDeregister(fh_);
  while (cuFileUseCount() > 0) cuFileDriverClose();
  g_pin_calls = 0;
  ScopedCudaOverride o(&CudaApi::cuMemHostAlloc, &FailingHostAlloc);
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd_;
  ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
  mem_->Upload(RandomBytes(kSize + 8192, 5));
  ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_GT(g_pin_calls.load(), 0) << "the pool never tried to pin";
  std::vector<uint8_t> got = mem_->Download();
  EXPECT_EQ(0, memcmp(got.data(), data_.data(), kSize));
  ASSERT_EQ(cuFileWrite(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(ReadWholeFile(path_), data_);
  cuFileHandleDeregister(fh_);
  while (cuFileUseCount() > 0) cuFileDriverClose();
  ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
}

TEST_F(CudaFault, NoStagingMemoryAtAllIsNomem) {
  cuFileHandleDeregister(fh_);
  while (cuFileUseCount() > 0) cuFileDriverClose();
  std::vector<uint8_t> sentinel = RandomBytes(kSize + 8192, 6);
  mem_->Upload(sentinel);
  {
    ScopedCudaOverride o(&CudaApi::cuMemHostAlloc, &FailingHostAlloc);
    StagingHostAlloc prev = InstallStagingHostAlloc(&FailingStagingAlloc);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    EXPECT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 4096),
              -static_cast<ssize_t>(CU_FILE_NOMEM_ERROR));
    EXPECT_EQ(cuFileWrite(fh_, mem_->ptr(), kSize, 0, 0),
              -static_cast<ssize_t>(CU_FILE_NOMEM_ERROR));
    InstallStagingHostAlloc(prev);
    cuFileHandleDeregister(fh_);
    while (cuFileUseCount() > 0) cuFileDriverClose();
  }
  EXPECT_EQ(mem_->Download(), sentinel) << "a failed request changed GPU memory";
  EXPECT_EQ(ReadWholeFile(path_), data_) << "a failed write changed the file";
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd_;
  ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
}

}  // namespace
}  // namespace ufile::test
