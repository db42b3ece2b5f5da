// SPDX-License-Identifier: Apache-2.0
// The pipelined read into GPU memory (core/read_pipeline: requests of 32 MiB
// to 512 MiB), chunks read into a ring of staging buffers and copied in file
// order. Checked on buffered descriptors, which take the pipeline, and on
// O_DIRECT ones, which double-buffer instead (their reads wait on the disk)
// and must meet the same cases: byte-exact at unaligned offsets, end of file
// inside a request and at a segment boundary (the result is the bytes up to
// it; nothing past it is written), EIO at chunk k (the request fails,
// nothing outside it changes, the library stays whole), a staging pool of
// one large buffer (a ring of one), and several threads reading at once (a
// request that starts alone is pipelined, those beside it double-buffer on
// their share of the pool). pread faults need the POSIX engine, so io_uring
// is off.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/cuda_api.h"
#include "support/faulty_sys_ops.h"
#include "support/memory_kinds.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kFile = 72 * kMiB + 4219;  // ends inside a chunk
constexpr size_t kGuard = 4096;
constexpr size_t kMaxRequest = 64 * kMiB;

class ReadPipeline : public ::testing::TestWithParam<bool> {
 protected:
  // Direct reads of these hot files would come from the page cache, past the
  // injected faults: here they go through O_DIRECT.
  ScopedEnv cache_off_{"UFILE_PAGE_CACHE_READS", "0"};
  void SetUp() override {
    direct_ = GetParam();
    if (direct_ && !DirectIoSupported(dir_.path()))
      GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
    CloseAll();  // staged parameters apply at the next open
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 8).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 8).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, false).err, CU_FILE_SUCCESS);
    Open();
  }
  void Open() {
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    file_ = RandomBytes(kFile, 11);
    WriteWholeFile(dir_.File("f"), file_);
    fd_ = ::open(dir_.File("f").c_str(), O_RDONLY | (direct_ ? O_DIRECT : 0));
    ASSERT_GE(fd_, 0);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    mem_ = AllocateMemory(MemoryKind::kDevice, kMaxRequest + 2 * kGuard);
    ASSERT_NE(mem_, nullptr);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    fh_ = nullptr;
    mem_.reset();
    CloseAll();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Reads size bytes at off into the buffer at kGuard (the buffer first set
  // to known bytes); checks the result is want, the bytes read are the
  // file's, and every other byte of the buffer is as before.
  void ReadAndCheck(size_t size, off_t off, ssize_t want, int want_errno = 0) {
    const std::vector<uint8_t> before = RandomBytes(mem_->size(), size + off);
    mem_->Upload(before);
    errno = 0;
    const ssize_t r = cuFileRead(fh_, mem_->ptr(), size, off, kGuard);
    const int err = errno;
    ASSERT_EQ(r, want) << "size " << size << " at " << off;
    if (want < 0) {
      EXPECT_EQ(err, want_errno) << std::strerror(err);
    }
    const std::vector<uint8_t> got = mem_->Download();
    const size_t data = want > 0 ? static_cast<size_t>(want) : 0;
    const size_t untouched_from = kGuard + (want > 0 ? data : size);
    EXPECT_EQ(0, std::memcmp(got.data(), before.data(), kGuard)) << "bytes before the request";
    EXPECT_EQ(0, std::memcmp(got.data() + kGuard, file_.data() + off, data)) << "wrong bytes";
    EXPECT_EQ(0, std::memcmp(got.data() + untouched_from, before.data() + untouched_from,
                             got.size() - untouched_from))
        << "bytes past what was read changed";
  }

  TempDir dir_;
  bool direct_ = false;
  std::vector<uint8_t> file_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  std::unique_ptr<TestMemory> mem_;
};

TEST_P(ReadPipeline, ByteExactAtUnalignedOffsets) {
  for (size_t size : {32 * kMiB, 33 * kMiB + 5, kMaxRequest})
    for (off_t off : {off_t{0}, off_t{4096 + 777}})
      ReadAndCheck(size, off, static_cast<ssize_t>(size));
}

TEST_P(ReadPipeline, EndOfFileInsideTheRequest) {
  // The file ends inside a chunk (from an aligned and an unaligned start),
  // 8 MiB after the start (a segment boundary on a buffered descriptor: 4 MiB
  // staging buffers), and right at the request's start.
  for (off_t off : {off_t{40 * kMiB}, off_t{64 * kMiB - 4096 - 99}})
    ReadAndCheck(kMaxRequest, off, static_cast<ssize_t>(kFile - off));
  ReadAndCheck(32 * kMiB, static_cast<off_t>(kFile - 8 * kMiB), static_cast<ssize_t>(8 * kMiB));
  ReadAndCheck(32 * kMiB, static_cast<off_t>(kFile), 0);
}

TEST_P(ReadPipeline, EioAtChunkKFailsTheRequestOnly) {
  for (size_t at_mib : {size_t{0}, size_t{17}, size_t{63}}) {
    SCOPED_TRACE(::testing::Message() << "EIO at " << at_mib << " MiB");
    FaultySysOps ops;
    ops.Arm({FaultySysOps::Op::kPread, static_cast<off_t>(at_mib * kMiB + 1000)});
    {
      ScopedSysOps scope(&ops);
      ReadAndCheck(kMaxRequest, 0, -1, EIO);
    }
    EXPECT_EQ(ops.fired(), 1);
  }
  ReadAndCheck(kMaxRequest, 4096, static_cast<ssize_t>(kMaxRequest));  // still whole
}

TEST_P(ReadPipeline, OneStagingBufferIsARingOfOne) {
  TearDown();
  const size_t sizes[] = {4, 1024, 4096};
  const size_t counts[] = {16, 4, 1};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(sizes, counts, 3).err, CU_FILE_SUCCESS);
  Open();
  ReadAndCheck(kMaxRequest, 4096 + 777, static_cast<ssize_t>(kMaxRequest));
  ReadAndCheck(kMaxRequest, 40 * kMiB, static_cast<ssize_t>(kFile - 40 * kMiB));
  TearDown();
  const size_t default_counts[] = {128, 64, 64};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(sizes, default_counts, 3).err, CU_FILE_SUCCESS);
}

TEST_P(ReadPipeline, ThreadsReadAtOnce) {
  constexpr int kThreads = 4;
  constexpr size_t kSize = 32 * kMiB + 333;
  std::vector<std::unique_ptr<TestMemory>> mems;
  for (int t = 0; t < kThreads; ++t) {
    mems.push_back(AllocateMemory(MemoryKind::kDevice, kSize));
    ASSERT_NE(mems.back(), nullptr);
  }
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      CUcontext ctx = nullptr;  // for Download on this thread
      if (Cuda().cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
          Cuda().cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        bad[t] = -1;
        return;
      }
      for (int it = 0; it < 8; ++it) {
        const off_t off = static_cast<off_t>((t * 8 + it) * kMiB + 55);
        if (cuFileRead(fh_, mems[t]->ptr(), kSize, off, 0) != static_cast<ssize_t>(kSize) ||
            std::memcmp(mems[t]->Download().data(), file_.data() + off, kSize) != 0)
          ++bad[t];
      }
      Cuda().cuDevicePrimaryCtxRelease(0);
    });
  for (auto &th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(Fd, ReadPipeline, ::testing::Values(false, true),
                         [](const auto &p) { return p.param ? "ODirect" : "Buffered"; });

}  // namespace
}  // namespace ufile::test
