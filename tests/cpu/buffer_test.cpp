// SPDX-License-Identifier: Apache-2.0
// cuFileBufRegister / cuFileBufDeregister on pageable host memory, and I/O
// through a registered buffer: overlap rules, refusals, the bounds check
// against the registration (nothing touched when it fails), byte-exact I/O.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr ssize_t kMappingRange = -static_cast<ssize_t>(CU_FILE_INVALID_MAPPING_RANGE);

CUfileOpError Reg(const void *p, size_t n, int flags = 0) {
  return cuFileBufRegister(p, n, flags).err;
}
CUfileOpError Dereg(const void *p) {
  return cuFileBufDeregister(p).err;
}

class BufferTest : public ::testing::Test {
 protected:
  void TearDown() override { CloseAll(); }
  std::vector<uint8_t> mem_ = std::vector<uint8_t>(1 << 16);
  uint8_t *p_ = mem_.data();
};

TEST_F(BufferTest, RegisterAndDeregisterPageableMemory) {
  ASSERT_EQ(Reg(p_, 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_), CU_FILE_MEMORY_NOT_REGISTERED) << "deregistered already";
  // Unaligned base and odd length are fine for host memory.
  ASSERT_EQ(Reg(p_ + 3, 1001), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_ + 3), CU_FILE_SUCCESS);
  // Known flags are accepted.
  ASSERT_EQ(Reg(p_, 4096, CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_), CU_FILE_SUCCESS);
}

TEST_F(BufferTest, OverlapsAreAlreadyRegistered) {
  ASSERT_EQ(Reg(p_ + 4096, 8192), CU_FILE_SUCCESS);  // [4096, 12288)
  EXPECT_EQ(Reg(p_ + 4096, 8192), CU_FILE_MEMORY_ALREADY_REGISTERED) << "same range";
  EXPECT_EQ(Reg(p_ + 4096, 1), CU_FILE_MEMORY_ALREADY_REGISTERED) << "same base";
  EXPECT_EQ(Reg(p_ + 5000, 100), CU_FILE_MEMORY_ALREADY_REGISTERED) << "inside";
  EXPECT_EQ(Reg(p_ + 12287, 1), CU_FILE_MEMORY_ALREADY_REGISTERED) << "last byte";
  EXPECT_EQ(Reg(p_ + 4000, 97), CU_FILE_MEMORY_ALREADY_REGISTERED) << "straddles the start";
  EXPECT_EQ(Reg(p_ + 12000, 1000), CU_FILE_MEMORY_ALREADY_REGISTERED) << "straddles the end";
  EXPECT_EQ(Reg(p_, 20000), CU_FILE_MEMORY_ALREADY_REGISTERED) << "covers it";
  // Adjacent on both sides is not an overlap.
  EXPECT_EQ(Reg(p_, 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(Reg(p_ + 12288, 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(Reg(p_ + 4095, 1), CU_FILE_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(Dereg(p_), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_ + 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_ + 12288), CU_FILE_SUCCESS);
  // Everything is free again.
  EXPECT_EQ(Reg(p_, 20000), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_), CU_FILE_SUCCESS);
}

TEST_F(BufferTest, DeregisterNeedsTheExactBase) {
  ASSERT_EQ(Reg(p_ + 100, 1000), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_ + 101), CU_FILE_MEMORY_NOT_REGISTERED) << "interior";
  EXPECT_EQ(Dereg(p_ + 99), CU_FILE_MEMORY_NOT_REGISTERED) << "before";
  EXPECT_EQ(Dereg(p_ + 1100), CU_FILE_MEMORY_NOT_REGISTERED) << "just past";
  EXPECT_EQ(Dereg(p_ + 5000), CU_FILE_MEMORY_NOT_REGISTERED) << "unknown";
  EXPECT_EQ(Dereg(nullptr), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(Dereg(p_ + 100), CU_FILE_SUCCESS) << "the failed calls removed nothing";
}

TEST_F(BufferTest, BadArgumentsAreInvalidValue) {
  EXPECT_EQ(Reg(nullptr, 4096), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(Reg(p_, 0), CU_FILE_INVALID_VALUE);
  const auto *top = reinterpret_cast<const void *>(UINTPTR_MAX - 10);
  EXPECT_EQ(Reg(top, 100), CU_FILE_INVALID_VALUE) << "base + length wraps";
  EXPECT_EQ(Reg(top, 11), CU_FILE_INVALID_VALUE) << "ends one past the address space";
  EXPECT_EQ(Reg(p_, SIZE_MAX), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(Reg(p_, 4096, 1 << 2), CU_FILE_INVALID_VALUE) << "unknown flag bit";
  EXPECT_EQ(Reg(p_, 4096, 1 << 30), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(Reg(p_, 4096, -1), CU_FILE_INVALID_VALUE);
  // None of them registered anything.
  EXPECT_EQ(Reg(p_, 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_), CU_FILE_SUCCESS);
}

TEST_F(BufferTest, RegistrationsEndWithTheDriverSession) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  ASSERT_EQ(Reg(p_, 4096), CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(Dereg(p_), CU_FILE_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(Reg(p_, 4096), CU_FILE_SUCCESS) << "free in the new session";
  EXPECT_EQ(Dereg(p_), CU_FILE_SUCCESS);
}

class BufferIoTest : public BufferTest {
 protected:
  void SetUp() override {
    file_ = RandomBytes(kFile, 11);
    WriteWholeFile(dir_.File("f"), file_);
    fd_ = ::open(dir_.File("f").c_str(), O_RDWR);
    ASSERT_GE(fd_, 0);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
  }
  void TearDown() override {
    cuFileHandleDeregister(fh_);
    ::close(fd_);
    BufferTest::TearDown();
  }
  static constexpr size_t kFile = 3 << 20;
  TempDir dir_;
  std::vector<uint8_t> file_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
};

TEST_F(BufferIoTest, RegisteredBufferIoIsByteExact) {
  const size_t kBuf = (2 << 20) + 100;
  std::vector<uint8_t> buf = RandomBytes(kBuf + 64, 12);  // 64 guard bytes past the registration
  const std::vector<uint8_t> buf0 = buf;
  ASSERT_EQ(Reg(buf.data(), kBuf), CU_FILE_SUCCESS);
  // Whole registration, then a piece at an offset.
  ASSERT_EQ(cuFileRead(fh_, buf.data(), kBuf, 5, 0), static_cast<ssize_t>(kBuf));
  EXPECT_EQ(0, std::memcmp(buf.data(), file_.data() + 5, kBuf));
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 1000, 777, kBuf - 1000), 1000);
  EXPECT_EQ(0, std::memcmp(buf.data() + kBuf - 1000, file_.data() + 777, 1000));
  EXPECT_EQ(0, std::memcmp(buf.data() + kBuf, buf0.data() + kBuf, 64)) << "guard bytes changed";
  // Write a piece from an offset of the registration, read the file back.
  std::memcpy(buf.data(), buf0.data(), kBuf);
  ASSERT_EQ(cuFileWrite(fh_, buf.data(), 300000, 4097, 12345), 300000);
  std::memcpy(file_.data() + 4097, buf0.data() + 12345, 300000);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), file_);
  EXPECT_EQ(Dereg(buf.data()), CU_FILE_SUCCESS);
}

TEST_F(BufferIoTest, IoBeyondTheRegistrationTouchesNothing) {
  const size_t kBuf = 1 << 20;
  std::vector<uint8_t> buf = RandomBytes(2 * kBuf, 13);  // allocated beyond the registration
  const std::vector<uint8_t> buf0 = buf;
  ASSERT_EQ(Reg(buf.data(), kBuf), CU_FILE_SUCCESS);
  struct Case {
    size_t size;
    off_t buf_off;
  } cases[] = {{kBuf + 1, 0}, {kBuf, 1}, {1, kBuf}, {4096, kBuf - 4095}, {2, kBuf - 1}};
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::Message() << "size " << c.size << " buf_off " << c.buf_off);
    EXPECT_EQ(cuFileRead(fh_, buf.data(), c.size, 0, c.buf_off), kMappingRange);
    EXPECT_EQ(cuFileWrite(fh_, buf.data(), c.size, 0, c.buf_off), kMappingRange);
  }
  EXPECT_EQ(buf, buf0);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), file_);
  // The last byte of the registration is in range.
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 1, 9, kBuf - 1), 1);
  EXPECT_EQ(buf[kBuf - 1], file_[9]);
  EXPECT_EQ(Dereg(buf.data()), CU_FILE_SUCCESS);
}

TEST_F(BufferIoTest, AfterDeregisterThePointerIsPlainMemoryAgain) {
  std::vector<uint8_t> buf(8192);
  ASSERT_EQ(Reg(buf.data(), 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileRead(fh_, buf.data(), 8192, 0, 0), kMappingRange);
  ASSERT_EQ(Dereg(buf.data()), CU_FILE_SUCCESS);
  // Unregistered host memory is not bounds-checked (nothing to check against).
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 8192, 0, 0), 8192);
  EXPECT_EQ(0, std::memcmp(buf.data(), file_.data(), 8192));
}

TEST_F(BufferIoTest, SizeZeroOnARegisteredBufferIsZero) {
  std::vector<uint8_t> buf(4096);
  ASSERT_EQ(Reg(buf.data(), 4096), CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileRead(fh_, buf.data(), 0, 0, 0), 0);
  EXPECT_EQ(cuFileWrite(fh_, buf.data(), 0, 0, 0), 0);
  EXPECT_EQ(Dereg(buf.data()), CU_FILE_SUCCESS);
}

}  // namespace
}  // namespace ufile::test
