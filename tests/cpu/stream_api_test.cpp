// SPDX-License-Identifier: Apache-2.0
// The stream API without a GPU: the NULL stream runs synchronously on host
// buffers (*bytes set before the call returns, I/O errors in *bytes),
// refused arguments, registration flags, and the feature bits.
#include <cufile.h>
#include <gtest/gtest.h>

#include <cstring>

#include "cpu/async_fixture.h"
#include "gpu/cuda_api.h"

namespace ufile::test {
namespace {

class StreamApi : public AsyncFixture {};

TEST_F(StreamApi, NullStreamWritesAndReadsSynchronously) {
  CUfileHandle_t fh = OpenFile("f", 1 << 20, 1);
  const std::vector<uint8_t> src = RandomBytes(300000, 2);
  std::vector<uint8_t> dst(300000 + 77, 0);
  size_t size = 300000 - 5;
  off_t file_off = 12345, buf_off = 5;
  ssize_t bytes = 0;
  ASSERT_EQ(cuFileWriteAsync(fh, const_cast<uint8_t *>(src.data()), &size, &file_off, &buf_off,
                             &bytes, nullptr)
                .err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(bytes, static_cast<ssize_t>(size));
  off_t dst_off = 77;
  bytes = 0;
  ASSERT_EQ(cuFileReadAsync(fh, dst.data(), &size, &file_off, &dst_off, &bytes, nullptr).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(bytes, static_cast<ssize_t>(size));
  EXPECT_EQ(0, memcmp(dst.data() + 77, src.data() + 5, size));
  // A read past the end is short.
  file_off = (1 << 20) - 100;
  ASSERT_EQ(cuFileReadAsync(fh, dst.data(), &size, &file_off, &dst_off, &bytes, nullptr).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(bytes, 100);
}

TEST_F(StreamApi, NullStreamIoErrorGoesToBytes) {
  int fd = -1;
  CUfileHandle_t fh = OpenFile("f", 8192, 3, O_RDWR, &fd);
  FailFdOps fail(fd, EIO);
  ScopedSysOps install(&fail);
  std::vector<char> buf(4096);
  size_t size = 4096;
  off_t off = 0, boff = 0;
  ssize_t bytes = 0;
  EXPECT_EQ(cuFileReadAsync(fh, buf.data(), &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(bytes, -1);  // NVIDIA's convention: -1 for an I/O error
}

TEST_F(StreamApi, RefusedArguments) {
  CUfileHandle_t fh = OpenFile("f", 8192, 4);
  CUfileHandle_t ro = OpenFile("ro", 8192, 5, O_RDONLY);
  std::vector<char> buf(4096);
  size_t size = 4096;
  off_t off = 0, boff = 0, neg = -1;
  ssize_t bytes = 0;
  char *b = buf.data();
  EXPECT_EQ(cuFileReadAsync(fh, nullptr, &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileReadAsync(fh, b, nullptr, &off, &boff, &bytes, nullptr).err,
            CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileReadAsync(fh, b, &size, nullptr, &boff, &bytes, nullptr).err,
            CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileReadAsync(fh, b, &size, &off, nullptr, &bytes, nullptr).err,
            CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileWriteAsync(fh, b, &size, &off, &boff, nullptr, nullptr).err,
            CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileReadAsync(nullptr, b, &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_HANDLE_NOT_REGISTERED);
  EXPECT_EQ(cuFileWriteAsync(ro, b, &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_INVALID_FILE_OPEN_FLAG);  // EBADF
  EXPECT_EQ(cuFileReadAsync(fh, b, &size, &neg, &boff, &bytes, nullptr).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(bytes, -CU_FILE_INVALID_VALUE);
  const std::string log = Log();
  for (const char *line : {"NULL buffer", "NULL size_p", "NULL file_offset_p",
                           "NULL bufPtr_offset_p", "NULL bytes pointer", "negative offset"})
    EXPECT_NE(log.find(line), std::string::npos) << line;
}

TEST_F(StreamApi, RegistrationFlags) {
  for (unsigned flags = 0; flags <= 15; ++flags) {
    EXPECT_EQ(cuFileStreamRegister(nullptr, flags).err, CU_FILE_SUCCESS) << flags;
    EXPECT_EQ(cuFileStreamDeregister(nullptr).err, CU_FILE_SUCCESS);
  }
  for (unsigned flags : {16u, 0x100u, ~0u})
    EXPECT_EQ(cuFileStreamRegister(nullptr, flags).err, CU_FILE_INVALID_VALUE) << flags;
  EXPECT_EQ(cuFileStreamDeregister(nullptr).err, CU_FILE_INVALID_VALUE);  // not registered
  if (!Cuda().available) {
    auto fake = reinterpret_cast<CUstream>(0x1000);
    EXPECT_EQ(cuFileStreamRegister(fake, 0).err, CU_FILE_INVALID_VALUE);
    CUfileHandle_t fh = OpenFile("f", 4096, 6);
    char buf[16];
    size_t size = 16;
    off_t off = 0;
    ssize_t bytes = 0;
    EXPECT_EQ(cuFileReadAsync(fh, buf, &size, &off, &off, &bytes, fake).err, CU_FILE_INVALID_VALUE);
    EXPECT_NE(Log().find("CUDA is not usable"), std::string::npos);
  }
  EXPECT_NE(Log().find("unknown flags"), std::string::npos);
}

TEST_F(StreamApi, ASecondRegistrationIsRefusedAndKeepsTheFirstFlags) {
  ASSERT_EQ(cuFileStreamRegister(nullptr, CU_FILE_STREAM_PAGE_ALIGNED_INPUTS).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileStreamRegister(nullptr, 0).err, CU_FILE_INVALID_VALUE);
  EXPECT_NE(Log().find("already registered"), std::string::npos);
  // The first registration's flags still hold: an unaligned offset is refused.
  CUfileHandle_t fh = OpenFile("f", 1 << 16, 8);
  std::vector<char> buf(1 << 16);
  size_t size = 8192;
  off_t off = 100, boff = 0;
  ssize_t bytes = 0;
  EXPECT_EQ(cuFileReadAsync(fh, buf.data(), &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileStreamDeregister(nullptr).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileStreamRegister(nullptr, 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileStreamDeregister(nullptr).err, CU_FILE_SUCCESS);
}

TEST_F(StreamApi, PageAlignedInputsAreChecked) {
  CUfileHandle_t fh = OpenFile("f", 1 << 16, 7);
  ASSERT_EQ(cuFileStreamRegister(nullptr, CU_FILE_STREAM_PAGE_ALIGNED_INPUTS).err, CU_FILE_SUCCESS);
  std::vector<char> buf(1 << 16);
  size_t size = 8192;
  off_t off = 4096, boff = 0;
  ssize_t bytes = 0;
  EXPECT_EQ(cuFileReadAsync(fh, buf.data(), &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(bytes, 8192);
  for (int which = 0; which < 3; ++which) {
    size_t s = which == 0 ? 100 : 8192;
    off_t o = which == 1 ? 100 : 4096, bo = which == 2 ? 100 : 0;
    EXPECT_EQ(cuFileReadAsync(fh, buf.data(), &s, &o, &bo, &bytes, nullptr).err,
              CU_FILE_INVALID_VALUE)
        << which;
  }
  EXPECT_EQ(cuFileStreamDeregister(nullptr).err, CU_FILE_SUCCESS);
  EXPECT_NE(Log().find("PAGE_ALIGNED_INPUTS"), std::string::npos);
}

TEST_F(StreamApi, FeatureFlagsAdvertiseBatchAndStreams) {
  CUfileDrvProps_t props{};
  ASSERT_EQ(cuFileDriverGetProperties(&props).err, CU_FILE_SUCCESS);
  EXPECT_TRUE(props.fflags & (1u << CU_FILE_BATCH_IO_SUPPORTED));
  EXPECT_TRUE(props.fflags & (1u << CU_FILE_STREAMS_SUPPORTED));
}

}  // namespace
}  // namespace ufile::test
