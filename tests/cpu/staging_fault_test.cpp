// SPDX-License-Identifier: Apache-2.0
// Staging buffers failing to allocate, on the synchronous, batch and stream
// paths: a precise NOMEM for what needed one, nothing else touched, and
// recovery once memory is back.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cpu/async_fixture.h"
#include "cpu/fake_gpu.h"
#include "gpu/cuda_api.h"
#include "gpu/staging_pool.h"
#include "support/batch_run.h"
#include "support/file_bytes.h"
#include "support/guarded_buffer.h"
#include "support/watchdog.h"

namespace ufile::test {
namespace {

using std::chrono::seconds;

constexpr size_t kChunk = 256 << 10;         // max_direct_io_size: the chunks
constexpr size_t kFile = 9 * kChunk + 4321;  // f: the file of the requests
constexpr size_t kSize = 8 * kChunk;         // a request: 8 chunks
constexpr off_t kOff = 12345;                // unaligned: O_DIRECT gets a head and a tail
constexpr size_t kGuard = 8192;
constexpr size_t kBufOff = kGuard + 57;  // the O_DIRECT middle lands aligned in memory
constexpr ssize_t kUnset = 0x7eadbeef;   // *bytes before the stream reaches the operation

// Staging buffers failing to allocate, through the StagingHostAlloc seam. On
// the CPU path staging buffers are plain (unpinned) memory, so this is the
// heap running out; with a GPU, pinning failing falls back to this same
// allocation. Staging serves O_DIRECT at unaligned memory (bounce buffers)
// and the completion flags of stream I/O.
std::atomic<int> g_allocs_left{0};  // allocations that succeed, then all fail
std::atomic<int> g_failures{0};

int FailingAlloc(void **out, size_t align, size_t size) {
  if (g_allocs_left.fetch_sub(1) > 0) {
    // Slow success: the other participants try (and fail) meanwhile.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return posix_memalign(out, align, size);
  }
  // The first failure waits for a second one: two participants fail together.
  if (++g_failures == 1)
    for (int i = 0; i < 100 && g_failures.load() < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return ENOMEM;
}

class StagingFaults : public AsyncFixture {
 protected:
  void SetUp() override {
    AsyncFixture::SetUp();
    if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "no O_DIRECT in " << dir_.path();
    // With a GPU, staging is pinned (cuMemHostAlloc) and never reaches the
    // seam; ctest hides the GPUs from the CPU tests (CUDA_VISIBLE_DEVICES).
    if (Cuda().available)
      GTEST_SKIP() << "a GPU is visible: staging buffers are pinned, not allocated through "
                      "the seam; run with CUDA_VISIBLE_DEVICES= (as ctest does)";
  }
  void TearDown() override {
    AsyncFixture::TearDown();  // closes the session: its pool frees what it got
    InstallStagingHostAlloc(nullptr);
  }
  // A fresh session (an empty staging pool) in which `allowed` allocations
  // succeed; 4 participants a request, 256 KiB chunks.
  void Session(int allowed) {
    while (cuFileUseCount() > 0) ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    g_allocs_left = allowed;
    g_failures = 0;
    InstallStagingHostAlloc(FailingAlloc);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 256).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 4).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 4).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    fh_ = OpenFile("f", kFile, 1, O_RDWR | O_DIRECT);
    file_ = RandomBytes(kFile, 1);
  }
  ssize_t Read(size_t boff) {
    mem_.Reset();
    return cuFileRead(fh_, mem_.data(), kSize, kOff, static_cast<off_t>(boff));
  }
  ssize_t Write(size_t boff) {
    mem_.Reset();
    return cuFileWrite(fh_, mem_.data(), kSize, kOff, static_cast<off_t>(boff));
  }
  void ExpectRead(ssize_t ret, size_t boff) {
    ASSERT_EQ(ret, static_cast<ssize_t>(kSize));
    EXPECT_TRUE(mem_.Holds(boff, file_.data() + kOff, kSize)) << "wrong bytes read";
    EXPECT_EQ(mem_.GuardsChanged(boff, kSize), "");
  }
  void ExpectWritten(ssize_t ret, size_t boff) {
    ASSERT_EQ(ret, static_cast<ssize_t>(kSize));
    std::memcpy(file_.data() + kOff, mem_.pattern().data() + boff, kSize);
    EXPECT_TRUE(FileBytes(dir_.File("f")) == file_) << "f differs after the write";
  }
  // After a failed write: f outside [kOff, + kSize) unchanged.
  void ExpectOutsideUnchanged() {
    const std::vector<uint8_t> now = FileBytes(dir_.File("f"));
    ASSERT_EQ(now.size(), kFile);
    EXPECT_EQ(0, std::memcmp(now.data(), file_.data(), kOff));
    EXPECT_EQ(0, std::memcmp(now.data() + kOff + kSize, file_.data() + kOff + kSize,
                             kFile - kOff - kSize));
    file_ = now;
  }

  static constexpr size_t kBounce = kBufOff + 1;  // the O_DIRECT middle is unaligned in memory
  // A read takes what the page cache holds straight into unaligned memory;
  // without page-cache reads every read at kBounce needs a bounce buffer.
  ScopedEnv no_cache_reads_{"UFILE_PAGE_CACHE_READS", "off"};
  CUfileHandle_t fh_ = nullptr;
  std::vector<uint8_t> file_;
  GuardedBuffer mem_{kBounce + kSize + kGuard, 3};
};

TEST_F(StagingFaults, NothingAllocatableIsNomemAndRecovers) {
  Session(0);
  Watchdog dog(seconds(60), "I/O with staging allocation failing");
  EXPECT_EQ(Read(kBounce), -static_cast<ssize_t>(CU_FILE_NOMEM_ERROR));
  EXPECT_EQ(mem_.GuardsChanged(kBounce, kSize), "");
  EXPECT_TRUE(FileBytes(dir_.File("f")) == file_) << "a read changed the file";
  EXPECT_EQ(Write(kBounce), -static_cast<ssize_t>(CU_FILE_NOMEM_ERROR));
  EXPECT_TRUE(mem_.Unchanged()) << "a write changed its source";
  ExpectOutsideUnchanged();
  EXPECT_GE(g_failures.load(), 2);
  ExpectRead(Read(kBufOff), kBufOff);  // aligned memory needs no staging
  InstallStagingHostAlloc(nullptr);    // memory is back: the same session recovers
  ExpectRead(Read(kBounce), kBounce);
  ExpectWritten(Write(kBounce), kBounce);
  EXPECT_NE(Log().find("staging buffer failed"), std::string::npos);
}

TEST_F(StagingFaults, PoolShrinksToWhatCouldBeAllocated) {
  Session(1);
  Watchdog dog(seconds(60), "I/O with one staging buffer");
  ExpectRead(Read(kBounce), kBounce);
  ExpectWritten(Write(kBounce), kBounce);
  EXPECT_GE(g_failures.load(), 1) << "no participant was refused a buffer";
}

TEST_F(StagingFaults, BatchEntryFailsAloneWithNomem) {
  Session(0);
  Watchdog dog(seconds(60), "batch with staging allocation failing");
  CUfileBatchHandle_t batch = nullptr;
  ASSERT_EQ(cuFileBatchIOSetUp(&batch, 2).err, CU_FILE_SUCCESS);
  GuardedBuffer aligned(kSize, 9);
  mem_.Reset();
  const std::vector<CUfileIOEvents_t> ev =
      RunBatch(batch, {{CUFILE_READ, fh_, &mem_, kSize, kOff, kBounce},
                       {CUFILE_READ, fh_, &aligned, kChunk, 4096, 0}});
  cuFileBatchIODestroy(batch);
  EXPECT_EQ(ev[0].status, CUFILE_FAILED);
  EXPECT_EQ(static_cast<ssize_t>(ev[0].ret), -static_cast<ssize_t>(CU_FILE_NOMEM_ERROR));
  EXPECT_EQ(mem_.GuardsChanged(kBounce, kSize), "");
  EXPECT_EQ(ev[1].status, CUFILE_COMPLETE);
  EXPECT_EQ(ev[1].ret, kChunk);
  EXPECT_TRUE(aligned.Holds(0, file_.data() + 4096, kChunk));
}

// No page for the completion flags: the stream operation runs synchronously
// (done when the call returns); its own bounce failing is stored in *bytes.
TEST_F(StagingFaults, StreamIoRunsSynchronouslyWithoutFlagPages) {
  Session(0);
  Watchdog dog(seconds(60), "stream I/O with staging allocation failing");
  FakeGpu gpu;
  FakeStream stream;
  gpu.Add(stream);
  size_t size = kSize;
  off_t off = kOff, boff = kBufOff;
  ssize_t bytes = kUnset;
  mem_.Reset();
  ASSERT_EQ(cuFileReadAsync(fh_, mem_.data(), &size, &off, &boff, &bytes, stream.handle()).err,
            CU_FILE_SUCCESS);
  ExpectRead(bytes, kBufOff);
  EXPECT_GE(gpu.syncs.load(), 1) << "the stream's earlier work was not waited for";
  boff = kBounce;
  bytes = kUnset;
  mem_.Reset();
  ASSERT_EQ(cuFileReadAsync(fh_, mem_.data(), &size, &off, &boff, &bytes, stream.handle()).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(bytes, -static_cast<ssize_t>(CU_FILE_NOMEM_ERROR));
  EXPECT_EQ(mem_.GuardsChanged(kBounce, kSize), "");
  InstallStagingHostAlloc(nullptr);
  bytes = kUnset;
  mem_.Reset();
  ASSERT_EQ(cuFileReadAsync(fh_, mem_.data(), &size, &off, &boff, &bytes, stream.handle()).err,
            CU_FILE_SUCCESS);
  stream.Sync();
  ExpectRead(bytes, kBounce);
  while (cuFileUseCount() > 0) cuFileDriverClose();  // retires the operation while gpu lives
}

}  // namespace
}  // namespace ufile::test
