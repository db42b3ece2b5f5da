// SPDX-License-Identifier: Apache-2.0
// Stream registration flags (each of 0..15: fixed values read at submission,
// the others when the stream reaches the operation), streams proceeding
// independently (one held by its own I/O does not hold another), many
// operations reusing completion flags, and errors delivered in *bytes.
#include <cufile.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "async/flag_pool.h"
#include "gpu/stream_fixture.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

using std::chrono::milliseconds;

// The SysOps seam sees every pread only with the thread-pool engine.
class StreamFlags : public StreamFixture {
 protected:
  ScopedEnv engine_{"UFILE_ENGINE", std::string("thread_pool")};
};

struct Params {
  size_t size;
  off_t file_off;
  off_t buf_off;
};

// Submits with `at_submit` in the parameters, changes them to `later` while a
// gate holds the stream, then checks which values the I/O used.
TEST_F(StreamFlags, FixedValuesAreReadAtSubmissionTheOthersWhenTheStreamArrives) {
  const Params at_submit{64u << 10, 4096 * 1, 0};
  const Params later{128u << 10, 4096 * 7, 4096 * 3};
  for (unsigned flags = 0; flags <= 15; ++flags) {
    SCOPED_TRACE(flags);
    CU_OK(Cuda().cuMemsetD8(dev_, 0, 1u << 20));
    CU_OK(Cuda().cuStreamSynchronize(nullptr));  // memsets are asynchronous
    ASSERT_EQ(cuFileStreamRegister(s1_, flags).err, CU_FILE_SUCCESS);
    sh_->size = at_submit.size;
    sh_->file_off = at_submit.file_off;
    sh_->buf_off = at_submit.buf_off;
    sh_->bytes = 0;
    Block(s1_, 0);
    ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                              &sh_->buf_off, &sh_->bytes, s1_)
                  .err,
              CU_FILE_SUCCESS);
    sh_->size = later.size;
    sh_->file_off = later.file_off;
    sh_->buf_off = later.buf_off;
    Release(0);
    CU_OK(Cuda().cuStreamSynchronize(s1_));
    const Params want{
        (flags & CU_FILE_STREAM_FIXED_FILE_SIZE) ? at_submit.size : later.size,
        (flags & CU_FILE_STREAM_FIXED_FILE_OFFSET) ? at_submit.file_off : later.file_off,
        (flags & CU_FILE_STREAM_FIXED_BUF_OFFSET) ? at_submit.buf_off : later.buf_off};
    EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(want.size));
    EXPECT_TRUE(DeviceHoldsFile(want.buf_off, want.file_off, want.size));
    ASSERT_EQ(cuFileStreamDeregister(s1_).err, CU_FILE_SUCCESS);
  }
}

TEST_F(StreamFlags, PageAlignedInputsViolatedAtRunTimeFailInBytes) {
  ASSERT_EQ(cuFileStreamRegister(s1_, CU_FILE_STREAM_PAGE_ALIGNED_INPUTS).err, CU_FILE_SUCCESS);
  sh_->size = 4096;
  sh_->file_off = 0;
  sh_->buf_off = 0;
  Block(s1_, 0);
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  sh_->file_off = 100;  // broken promise, seen when the stream arrives
  Release(0);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, -static_cast<ssize_t>(CU_FILE_INVALID_VALUE));
  // A fixed value is checked at submission (a registered stream is
  // deregistered before it registers again).
  ASSERT_EQ(cuFileStreamDeregister(s1_).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileStreamRegister(
                s1_, CU_FILE_STREAM_PAGE_ALIGNED_INPUTS | CU_FILE_STREAM_FIXED_FILE_OFFSET)
                .err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_INVALID_VALUE);
  ASSERT_EQ(cuFileStreamDeregister(s1_).err, CU_FILE_SUCCESS);
}

TEST_F(StreamFlags, ErrorsOfTheIoGoToBytes) {
  sh_->size = kDev + 1;  // past the end of the device allocation
  sh_->file_off = 0;
  sh_->buf_off = 0;
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, -static_cast<ssize_t>(CU_FILE_CUDA_POINTER_RANGE_ERROR));
}

// Fails every pread of the file fd names with EIO.
class FailFd : public SysOps {
 public:
  explicit FailFd(int fd) : file_(fd) {}
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    if (file_.Names(fd)) return errno = EIO, -1;
    return SysOps::Pread(fd, buf, len, off);
  }

 private:
  FileId file_;
};

TEST_F(StreamFlags, SystemErrorIsMinusOne) {
  FailFd fail(fd_);
  ScopedSysOps install(&fail);
  sh_->size = 4096;
  sh_->file_off = 0;
  sh_->buf_off = 0;
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, -1);
}

// Holds every pread of the file fd names until Open().
class HoldFd : public SysOps {
 public:
  explicit HoldFd(int fd) : file_(fd) {}
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    if (file_.Names(fd))
      while (!open_.load()) std::this_thread::sleep_for(milliseconds(1));
    return SysOps::Pread(fd, buf, len, off);
  }
  std::atomic<bool> open_{false};

 private:
  FileId file_;
};

// s1's I/O is stuck in the file system; s2's completes meanwhile, and s1
// moves once its own I/O does.
TEST_F(StreamFlags, TwoStreamsProceedIndependently) {
  int other_fd = -1;
  CUfileHandle_t other = OpenFile("other", data_, &other_fd);
  HoldFd hold(fd_);
  ScopedSysOps install(&hold);
  sh_->size = 1u << 20;
  sh_->file_off = 0;
  sh_->buf_off = 0;
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  size_t size2 = 2u << 20;
  off_t off2 = 1u << 20, boff2 = 4u << 20;
  ASSERT_EQ(cuFileReadAsync(other, reinterpret_cast<void *>(dev_), &size2, &off2, &boff2,
                            &sh_->bytes2, s2_)
                .err,
            CU_FILE_SUCCESS);
  CU_OK(Cuda().cuStreamSynchronize(s2_));
  EXPECT_EQ(sh_->bytes2, static_cast<ssize_t>(2u << 20));
  EXPECT_EQ(Cuda().cuStreamQuery(s1_), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(sh_->bytes, 0);
  hold.open_ = true;
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(1u << 20));
  EXPECT_TRUE(DeviceHoldsFile(0, 0, 1u << 20));
  EXPECT_TRUE(DeviceHoldsFile(4u << 20, 1u << 20, 2u << 20));
}

// More operations in flight than one page of flags holds, on two streams.
TEST_F(StreamFlags, ManyOperationsReuseCompletionFlags) {
  constexpr int kOps = 200;
  constexpr size_t kChunk = 64u << 10;
  std::vector<size_t> size(kOps, kChunk);
  std::vector<off_t> off(kOps), boff(kOps);
  std::vector<ssize_t> bytes(kOps, 0);
  Block(s1_, 0);
  Block(s2_, 1);
  for (int i = 0; i < kOps; ++i) {
    off[i] = boff[i] = static_cast<off_t>(i * kChunk);
    ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &size[i], &off[i], &boff[i],
                              &bytes[i], i % 2 ? s2_ : s1_)
                  .err,
              CU_FILE_SUCCESS);
  }
  EXPECT_EQ(FlagPool::Get().in_use(), size_t{kOps});
  Release(0);
  Release(1);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  CU_OK(Cuda().cuStreamSynchronize(s2_));
  for (int i = 0; i < kOps; ++i) ASSERT_EQ(bytes[i], static_cast<ssize_t>(kChunk)) << i;
  EXPECT_TRUE(DeviceHoldsFile(0, 0, kOps * kChunk));
  EXPECT_TRUE(Quiet()) << "operations not retired";
}

}  // namespace
}  // namespace ufile::test
