// SPDX-License-Identifier: Apache-2.0
// How a request waits for its staging copies, seen through the CUDA seam:
// an O_DIRECT request's participants sleep and poll their copies' events
// with cuEventQuery (their copies overlap slow storage; gpu/copy_wait.h), a
// buffered request's spin on them with cuEventSynchronize; both stay
// byte-exact; O_DIRECT copies under 1 MiB are spun on too. A request of one
// chunk leases one staging buffer, not two. A failed event record or poll
// still waits for the copy it followed before the request returns, and fails
// the request.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "gpu/cuda_api.h"
#include "support/memory_kinds.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kSize = 16u << 20;  // four O_DIRECT chunks, sixteen buffered ones

std::atomic<int> g_polls{0}, g_spinning_waits{0}, g_host_allocs{0};
std::atomic<int> g_record_calls{0}, g_record_fail_at{0}, g_query_calls{0};
decltype(CudaApi::cuEventQuery) g_real_query = nullptr;
decltype(CudaApi::cuEventSynchronize) g_real_sync = nullptr;
decltype(CudaApi::cuMemHostAlloc) g_real_host_alloc = nullptr;
decltype(CudaApi::cuEventRecord) g_real_record = nullptr;

CUresult CountingQuery(CUevent ev) {
  ++g_polls;
  return g_real_query(ev);
}
CUresult CountingSync(CUevent ev) {
  ++g_spinning_waits;
  return g_real_sync(ev);
}
CUresult CountingHostAlloc(void **p, size_t n, unsigned flags) {
  ++g_host_allocs;
  return g_real_host_alloc(p, n, flags);
}
CUresult FailingRecord(CUevent ev, CUstream s) {
  if (++g_record_calls == g_record_fail_at) return CUDA_ERROR_LAUNCH_FAILED;
  return g_real_record(ev, s);
}
CUresult FailingFirstQuery(CUevent ev) {
  if (++g_query_calls == 1) return CUDA_ERROR_LAUNCH_FAILED;
  return g_real_query(ev);
}

// While alive, counts the polls (cuEventQuery) and the spinning waits
// (cuEventSynchronize) of the copies, from zero.
class CountedWaits {
 public:
  CountedWaits() {
    g_polls = 0;
    g_spinning_waits = 0;
  }

 private:
  ScopedCudaOverride<decltype(g_real_sync)> sync_{&CudaApi::cuEventSynchronize, &CountingSync};
  ScopedCudaOverride<decltype(g_real_query)> query_{&CudaApi::cuEventQuery, &CountingQuery};
};

class StagingWait : public ::testing::Test {
 protected:
  // The direct requests here are the ones that wait on the disk: without
  // this, those of a hot file come from the page cache and spin like
  // buffered ones.
  ScopedEnv cache_off_{"UFILE_PAGE_CACHE_READS", "0"};
  void SetUp() override {
    g_real_query = Cuda().cuEventQuery;
    g_real_sync = Cuda().cuEventSynchronize;
    g_real_host_alloc = Cuda().cuMemHostAlloc;
    g_real_record = Cuda().cuEventRecord;
    // Lanes and staging buffers are made on first demand in a session, so
    // the session starts with the seam in place.
    CloseAll();
    host_alloc_ = std::make_unique<ScopedCudaOverride<decltype(g_real_host_alloc)>>(
        &CudaApi::cuMemHostAlloc, &CountingHostAlloc);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 16).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    data_ = RandomBytes(kSize, 21);
    WriteWholeFile(dir_.File("f"), data_);
    mem_ = AllocateMemory(MemoryKind::kDevice, kSize);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    CloseAll();
    host_alloc_.reset();
  }
  void Open(int flags) {
    fd_ = open(dir_.File("f").c_str(), flags);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(RegisterFd(fd_, &fh_), CU_FILE_SUCCESS);
  }
  // Reads the file, writes it back from GPU memory, reads the file back;
  // counts the polls and the spinning waits meanwhile.
  void RoundTrip() {
    CountedWaits counted;
    ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
    EXPECT_EQ(mem_->Download(), data_);
    const std::vector<uint8_t> next = RandomBytes(kSize, 22);
    mem_->Upload(next);
    ASSERT_EQ(cuFileWrite(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
    EXPECT_EQ(ReadWholeFile(dir_.File("f")), next);
  }

  TempDir dir_;
  std::vector<uint8_t> data_;
  std::unique_ptr<TestMemory> mem_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  std::unique_ptr<ScopedCudaOverride<decltype(g_real_host_alloc)>> host_alloc_;
};

TEST_F(StagingWait, DirectRequestsSleepOnTheirCopies) {
  if (!DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  Open(O_RDWR | O_DIRECT);
  RoundTrip();
  EXPECT_GT(g_polls.load(), 0);
  EXPECT_EQ(g_spinning_waits.load(), 0);
}

// A copy under 1 MiB ends sooner than a sleep would: O_DIRECT or not, it is
// spun on.
TEST_F(StagingWait, SmallDirectCopiesAreSpunOn) {
  if (!DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  Open(O_RDWR | O_DIRECT);
  {
    CountedWaits counted;
    ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), 64 << 10, 4096, 0), 64 << 10);
  }
  EXPECT_GT(g_spinning_waits.load(), 0);
  EXPECT_EQ(g_polls.load(), 0);
  std::vector<uint8_t> got = mem_->Download();
  EXPECT_EQ(0, memcmp(got.data(), data_.data() + 4096, 64 << 10));
}

TEST_F(StagingWait, BufferedRequestsSpinOnTheirCopies) {
  Open(O_RDWR);
  RoundTrip();
  EXPECT_GT(g_spinning_waits.load(), 0);
  EXPECT_EQ(g_polls.load(), 0);
}

TEST_F(StagingWait, OneChunkLeasesOneStagingBuffer) {
  Open(O_RDWR);
  g_host_allocs = 0;
  ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), 4096, 0, 0), 4096);
  EXPECT_EQ(g_host_allocs.load(), 1);
  std::vector<uint8_t> got = mem_->Download();
  EXPECT_EQ(0, memcmp(got.data(), data_.data(), 4096));
}

TEST_F(StagingWait, FailedEventRecordFailsTheRequest) {
  Open(O_RDWR);
  const std::vector<uint8_t> sentinel = RandomBytes(kSize, 23);
  for (int k : {1, 3}) {
    mem_->Upload(sentinel);
    g_record_calls = 0;
    g_record_fail_at = k;
    {
      ScopedCudaOverride<decltype(g_real_record)> o(&CudaApi::cuEventRecord, &FailingRecord);
      EXPECT_EQ(cuFileRead(fh_, mem_->ptr(), kSize / 2, 0, kSize / 2),
                -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR))
          << "k=" << k;
    }
    std::vector<uint8_t> got = mem_->Download();
    EXPECT_EQ(0, memcmp(got.data(), sentinel.data(), kSize / 2)) << "bytes before the request";
  }
  // The library is still whole: the same read now succeeds, byte-exact.
  ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(mem_->Download(), data_);
}

// A poll that fails (the context broke) fails the request; the participant
// still waits for its copy before its staging buffer goes back to the pool.
TEST_F(StagingWait, FailedPollFailsTheDirectRequest) {
  if (!DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  Open(O_RDWR | O_DIRECT);
  const std::vector<uint8_t> sentinel = RandomBytes(kSize, 24);
  mem_->Upload(sentinel);
  g_query_calls = 0;
  {
    ScopedCudaOverride<decltype(g_real_query)> o(&CudaApi::cuEventQuery, &FailingFirstQuery);
    EXPECT_EQ(cuFileRead(fh_, mem_->ptr(), kSize / 2, 0, kSize / 2),
              -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR));
  }
  EXPECT_GE(g_query_calls.load(), 1);
  std::vector<uint8_t> got = mem_->Download();
  EXPECT_EQ(0, memcmp(got.data(), sentinel.data(), kSize / 2)) << "bytes before the request";
  ASSERT_EQ(cuFileRead(fh_, mem_->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(mem_->Download(), data_);
}

}  // namespace
}  // namespace ufile::test
