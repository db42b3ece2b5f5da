// SPDX-License-Identifier: Apache-2.0
// CUDA failures on the batch and stream paths, injected through the CUDA
// seam: a batch group whose GPU copy (gather kernel, or per-entry copies
// where the kernel cannot run) fails ends every entry of it CUFILE_FAILED
// with -CU_FILE_CUDA_DRIVER_ERROR, exactly once, and writes no GPU memory; a
// stream read whose staging copy fails stores -CU_FILE_CUDA_DRIVER_ERROR in
// *bytes_read_p. Afterwards the same work succeeds, byte-exact.
#include <cufile.h>
#include <gtest/gtest.h>

#include <map>

#include "gpu/stream_fixture.h"

namespace ufile::test {
namespace {

CUresult FailLaunch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, CUstream, void **, void **) {
  return CUDA_ERROR_LAUNCH_FAILED;
}
CUresult FailCopy(CUdeviceptr, CUdeviceptr, size_t, CUstream) { return CUDA_ERROR_ILLEGAL_ADDRESS; }
CUresult FailHtoD(CUdeviceptr, const void *, size_t, CUstream) { return CUDA_ERROR_ILLEGAL_ADDRESS; }

class AsyncCudaFault : public StreamFixture {
 protected:
  // Submits n 4 KiB reads into dev_ (entry i at 8 KiB * i) and collects
  // every event, checking that each cookie comes back exactly once.
  std::map<uintptr_t, CUfileIOEvents_t> RunBatch(unsigned n) {
    CUfileBatchHandle_t batch = nullptr;
    EXPECT_EQ(cuFileBatchIOSetUp(&batch, n).err, CU_FILE_SUCCESS);
    std::vector<CUfileIOParams_t> p(n);
    for (unsigned i = 0; i < n; ++i) {
      p[i].mode = CUFILE_BATCH;
      p[i].opcode = CUFILE_READ;
      p[i].fh = fh_;
      p[i].u.batch.devPtr_base = reinterpret_cast<void *>(dev_);
      p[i].u.batch.devPtr_offset = static_cast<off_t>(i * 8192);
      p[i].u.batch.file_offset = static_cast<off_t>(i * 4096 * 3);
      p[i].u.batch.size = 4096;
      p[i].cookie = reinterpret_cast<void *>(uintptr_t{i} + 1);
    }
    EXPECT_EQ(cuFileBatchIOSubmit(batch, n, p.data(), 0).err, CU_FILE_SUCCESS);
    std::map<uintptr_t, CUfileIOEvents_t> got;
    std::vector<CUfileIOEvents_t> ev(n);
    // Bounded: at most 30 waits of 1 s for at least one event (the first
    // group of a process also loads the gather kernel).
    for (int round = 0; got.size() < n && round < 30; ++round) {
      unsigned nr = n;
      timespec t{1, 0};
      EXPECT_EQ(cuFileBatchIOGetStatus(batch, 1, &nr, ev.data(), &t).err, CU_FILE_SUCCESS);
      for (unsigned i = 0; i < nr; ++i)
        EXPECT_TRUE(got.emplace(reinterpret_cast<uintptr_t>(ev[i].cookie), ev[i]).second)
            << "cookie reported twice";
    }
    cuFileBatchIODestroy(batch);
    return got;
  }
};

TEST_F(AsyncCudaFault, BatchGatherFailureFailsItsEntriesAndTouchesNoGpuMemory) {
  constexpr unsigned kN = 40;
  const std::vector<uint8_t> sentinel = RandomBytes(kN * 8192, 9);
  CU_OK(Cuda().cuMemcpyHtoD(dev_, sentinel.data(), sentinel.size()));
  CU_OK(Cuda().cuStreamSynchronize(nullptr));  // a pageable upload may return before it lands
  {
    ScopedCudaOverride launch(&CudaApi::cuLaunchKernel, &FailLaunch);
    ScopedCudaOverride copy(&CudaApi::cuMemcpyAsync, &FailCopy);
    std::map<uintptr_t, CUfileIOEvents_t> got = RunBatch(kN);
    ASSERT_EQ(got.size(), kN);
    for (const auto &[cookie, e] : got) {
      EXPECT_EQ(e.status, CUFILE_FAILED) << cookie;
      EXPECT_EQ(static_cast<ssize_t>(e.ret), -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR))
          << cookie;
    }
  }
  EXPECT_EQ(Download(0, sentinel.size()), sentinel) << "a failed batch wrote GPU memory";
  std::map<uintptr_t, CUfileIOEvents_t> again = RunBatch(kN);
  ASSERT_EQ(again.size(), kN);
  for (unsigned i = 0; i < kN; ++i) {
    EXPECT_EQ(again.at(i + 1).status, CUFILE_COMPLETE) << i;
    EXPECT_TRUE(DeviceHoldsFile(i * 8192, i * 4096 * 3, 4096)) << i;
  }
}

TEST_F(AsyncCudaFault, StreamReadCopyFailureIsStoredInBytes) {
  constexpr size_t kSize = 8u << 20;
  const std::vector<uint8_t> sentinel = RandomBytes(kDev, 10);
  CU_OK(Cuda().cuMemcpyHtoD(dev_, sentinel.data(), kDev));
  CU_OK(Cuda().cuStreamSynchronize(nullptr));  // a pageable upload may return before it lands
  sh_->size = kSize;
  sh_->file_off = 0;
  sh_->buf_off = 4096;
  {
    ScopedCudaOverride o(&CudaApi::cuMemcpyHtoDAsync, &FailHtoD);
    ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                              &sh_->buf_off, &sh_->bytes, s1_)
                  .err,
              CU_FILE_SUCCESS);
    CU_OK(Cuda().cuStreamSynchronize(s1_));
  }
  EXPECT_EQ(sh_->bytes, -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR));
  const std::vector<uint8_t> got = Download(0, kDev);
  EXPECT_EQ(0, memcmp(got.data(), sentinel.data(), 4096)) << "bytes before the request changed";
  EXPECT_EQ(0, memcmp(got.data() + 4096 + kSize, sentinel.data() + 4096 + kSize,
                      kDev - 4096 - kSize))
      << "bytes after the request changed";
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(kSize));
  EXPECT_TRUE(DeviceHoldsFile(4096, 0, kSize));
}

}  // namespace
}  // namespace ufile::test
