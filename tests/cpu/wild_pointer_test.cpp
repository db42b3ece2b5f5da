// SPDX-License-Identifier: Apache-2.0
// Host buffers that may not be accessed, or not written, on an O_DIRECT handle.
// At an unaligned address the bytes go through a bounce buffer, and copying
// them to or from the caller's memory must fail with EFAULT, as pread and
// pwrite do for the aligned case, not crash the process. A write from such
// a buffer leaves the file as it was.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kSize = 64 * 1024;

class WildPointer : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!DirectIoSupported(dir_.path()))
      GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
    CloseAll();
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, GetParam()).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    file_ = RandomBytes(kSize, 7);
    WriteWholeFile(dir_.File("f"), file_);
    fd_ = open(dir_.File("f").c_str(), O_RDWR | O_DIRECT);
    ASSERT_GE(fd_, 0);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    // Addresses no access is allowed to. Reserved rather than unmapped, so
    // that no later mapping (a thread stack, a staging buffer) can reuse them.
    void *m = mmap(nullptr, kSize + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    gone_ = static_cast<char *>(m);
  }
  void TearDown() override {
    if (gone_) munmap(gone_, kSize + 4096);
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    cuFileDriverClose();
  }
  void ExpectFault(ssize_t ret, const char *what) {
    const int err = errno;
    EXPECT_EQ(ret, -1) << what;
    EXPECT_EQ(err, EFAULT) << what << ": " << std::strerror(err);
    EXPECT_TRUE(ReadWholeFile(dir_.File("f")) == file_) << what << " changed the file";
  }

  TempDir dir_;
  std::vector<uint8_t> file_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  char *gone_ = nullptr;
};

TEST_P(WildPointer, InaccessibleBufferIsEfault) {
  ExpectFault(cuFileRead(fh_, gone_ + 1, 8192, 0, 0), "unaligned read");
  ExpectFault(cuFileWrite(fh_, gone_ + 1, 8192, 0, 0), "unaligned write");
  ExpectFault(cuFileRead(fh_, gone_, 8192, 0, 0), "aligned read");
  ExpectFault(cuFileWrite(fh_, gone_, 8192, 0, 0), "aligned write");
}

TEST_P(WildPointer, ReadOnlyBufferIsEfaultForReads) {
  void *m = mmap(nullptr, kSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  char *ro = static_cast<char *>(m);
  ExpectFault(cuFileRead(fh_, ro + 1, 8192, 0, 0), "read into read-only memory");
  // Writing from read-only memory is fine: the zeros reach the file.
  EXPECT_EQ(cuFileWrite(fh_, ro + 1, 8192, 4096, 0), 8192);
  std::memset(file_.data() + 4096, 0, 8192);
  EXPECT_TRUE(ReadWholeFile(dir_.File("f")) == file_);
  munmap(m, kSize);
}

TEST_P(WildPointer, TheDriverStillWorksAfterwards) {
  ExpectFault(cuFileRead(fh_, gone_ + 3, kSize - 4096, 0, 0), "unaligned read");
  std::vector<char> buf(kSize + 1);
  EXPECT_EQ(cuFileRead(fh_, buf.data() + 1, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(std::memcmp(buf.data() + 1, file_.data(), kSize), 0);
}

INSTANTIATE_TEST_SUITE_P(Engine, WildPointer, ::testing::Values(false, true),
                         [](const auto &p) { return p.param ? "IoUring" : "Posix"; });

}  // namespace
}  // namespace ufile::test
