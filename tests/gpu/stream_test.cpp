// SPDX-License-Identifier: Apache-2.0
// cuFileReadAsync / cuFileWriteAsync on CUDA streams: ordering against work
// before and after (kernels, and host-released gates), parameters set by a
// kernel earlier in the stream, results seen by a kernel after, the NULL
// stream, and cuFileDriverClose waiting for enqueued operations.
#include <cufile.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "async/flag_pool.h"
#include "gpu/stream_fixture.h"
#ifdef UFILE_HAVE_TEST_KERNELS
#include "gpu_kernels/stream_kernels.h"
#endif

namespace ufile::test {
namespace {

using std::chrono::milliseconds;
constexpr uint64_t kSpinNs = 30'000'000;  // 30 ms of GPU work before the I/O

class StreamOrder : public StreamFixture {
 protected:
  void SetUp() override {
    StreamFixture::SetUp();
#ifdef UFILE_HAVE_TEST_KERNELS
    if (HasFatalFailure()) return;
    ASSERT_EQ(WarmUpKernels(s1_, &sh_->size, &sh_->file_off, &sh_->seen), 0);
#endif
  }
  void RequireKernels() {
#ifndef UFILE_HAVE_TEST_KERNELS
    GTEST_SKIP() << "built without nvcc: no test kernels";
#endif
  }
};

// The operation waits for earlier work: while a gate holds the stream, the
// read has not happened; once released, the data and *bytes are there.
TEST_F(StreamOrder, ReadAsyncWaitsForEarlierWork) {
  sh_->size = 4u << 20;
  sh_->file_off = 4096 * 3 + 5;
  sh_->buf_off = 11;
  Block(s1_, 0);
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(Cuda().cuStreamQuery(s1_), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(sh_->bytes, 0);
  const std::vector<uint8_t> untouched = Download(0, 4096);
  EXPECT_EQ(std::count(untouched.begin(), untouched.end(), 0), 4096);
  Release(0);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(4u << 20));
  EXPECT_TRUE(DeviceHoldsFile(11, 4096 * 3 + 5, 4u << 20));
  EXPECT_TRUE(Quiet()) << "operations not retired";
}

#ifdef UFILE_HAVE_TEST_KERNELS
TEST_F(StreamOrder, KernelAfterReadAsyncSeesTheDataAndTheResult) {
  const size_t n = 8u << 20, half = kDev / 2;
  sh_->size = n;
  sh_->file_off = 1000;
  sh_->buf_off = 0;
  ASSERT_EQ(LaunchSpin(s1_, kSpinNs), 0);
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(LaunchInvert(s1_, dev_ + half, dev_, n), 0);
  ASSERT_EQ(LaunchCopyResult(s1_, &sh_->bytes, &sh_->seen), 0);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->seen, static_cast<ssize_t>(n));
  std::vector<uint8_t> got = Download(half, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += got[i] != (data_[1000 + i] ^ 0xA5);
  EXPECT_EQ(bad, 0u);
}

TEST_F(StreamOrder, WriteAsyncWritesWhatAnEarlierKernelProduced) {
  const size_t n = 6u << 20;
  sh_->size = n;
  sh_->file_off = 4096;
  sh_->buf_off = 3;
  ASSERT_EQ(LaunchSpin(s1_, kSpinNs), 0);
  ASSERT_EQ(LaunchFill(s1_, dev_, n + 3, 99), 0);
  ASSERT_EQ(cuFileWriteAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                             &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(n));
  std::vector<uint8_t> file = ReadWholeFile(dir_.File("data"));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += file[4096 + i] != Pattern(99, i + 3);
  EXPECT_EQ(bad, 0u);
}

TEST_F(StreamOrder, ParametersSetByAnEarlierKernel) {
  sh_->size = 1;  // what the host says at submission: the kernel changes it
  sh_->file_off = 0;
  sh_->buf_off = 0;
  ASSERT_EQ(LaunchSpin(s1_, kSpinNs), 0);
  ASSERT_EQ(
      LaunchSetParams(s1_, &sh_->size, &sh_->file_off, &sh_->buf_off, (1u << 20) + 3, 12345, 77),
      0);
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>((1u << 20) + 3));
  EXPECT_TRUE(DeviceHoldsFile(77, 12345, (1u << 20) + 3));
}

TEST_F(StreamOrder, NullStreamFollowsTheLegacyStream) {
  const size_t n = 2u << 20;
  ASSERT_EQ(LaunchSpin(nullptr, kSpinNs), 0);
  ASSERT_EQ(LaunchFill(nullptr, dev_, n, 5), 0);
  sh_->size = n;
  sh_->file_off = 0;
  sh_->buf_off = 0;
  ASSERT_EQ(cuFileWriteAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                             &sh_->buf_off, &sh_->bytes, nullptr)
                .err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(n));  // done before the call returned
  std::vector<uint8_t> file = ReadWholeFile(dir_.File("data"));
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += file[i] != Pattern(5, i);
  EXPECT_EQ(bad, 0u);
}
#else
TEST_F(StreamOrder, KernelCases) {
  RequireKernels();
}
#endif

TEST_F(StreamOrder, NullStreamReadIsDoneOnReturn) {
  sh_->size = (3u << 20) + 1;
  sh_->file_off = 7;
  sh_->buf_off = 4096;
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, nullptr)
                .err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>((3u << 20) + 1));
  EXPECT_TRUE(DeviceHoldsFile(4096, 7, (3u << 20) + 1));
}

TEST_F(StreamOrder, DriverCloseWaitsForEnqueuedOperations) {
  sh_->size = 1u << 20;
  sh_->file_off = 0;
  sh_->buf_off = 0;
  Block(s1_, 0);
  ASSERT_EQ(cuFileReadAsync(fh_, reinterpret_cast<void *>(dev_), &sh_->size, &sh_->file_off,
                            &sh_->buf_off, &sh_->bytes, s1_)
                .err,
            CU_FILE_SUCCESS);
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    while (cuFileUseCount() > 0) cuFileDriverClose();
    closed = true;
  });
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(closed) << "closed with a stream operation enqueued";
  Release(0);
  closer.join();
  CU_OK(Cuda().cuStreamSynchronize(s1_));
  EXPECT_EQ(sh_->bytes, static_cast<ssize_t>(1u << 20));
  EXPECT_TRUE(DeviceHoldsFile(0, 0, 1u << 20));
}

}  // namespace
}  // namespace ufile::test
