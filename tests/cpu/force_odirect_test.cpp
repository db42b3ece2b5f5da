// SPDX-License-Identifier: Apache-2.0
// properties.force_odirect_mode: a descriptor opened without O_DIRECT does
// ufile's I/O through an O_DIRECT reopening of the same file. Observable:
// an aligned write leaves no page-cache pages behind (a buffered one does),
// the reopening is one more descriptor until deregistration, unaligned
// pieces still work, and where the reopen fails the handle stays buffered.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/faulty_sys_ops.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kSize = 1 << 20;

class ForceODirect : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!DirectIoSupported(dir_.path()))
      GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
    CloseAll();
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, GetParam()).err,
              CU_FILE_SUCCESS);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    CloseAll();
    cuFileSetParameterBool(CUFILE_PARAM_FORCE_ODIRECT_MODE, false);
  }
  // Opens the driver with the mode set, and a fresh file without O_DIRECT.
  void Open(bool force) {
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_FORCE_ODIRECT_MODE, force).err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    fd_ = open(dir_.File("f").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd_, 0) << std::strerror(errno);
  }
  void Register() {
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
  }
  // An aligned 1 MiB write from aligned memory; the file's bytes after it.
  void WriteAligned(const std::vector<uint8_t> &data) {
    void *p = std::aligned_alloc(4096, kSize);
    std::memcpy(p, data.data(), kSize);
    EXPECT_EQ(cuFileWrite(fh_, p, kSize, 0, 0), static_cast<ssize_t>(kSize));
    std::free(p);
  }

  TempDir dir_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
};

TEST_P(ForceODirect, AlignedWritesBypassThePageCache) {
  Open(true);
  const size_t before = OpenFdCount();
  Register();
  EXPECT_EQ(OpenFdCount(), before + 1) << "the O_DIRECT reopening";
  const std::vector<uint8_t> data = RandomBytes(kSize, 1);
  WriteAligned(data);
  EXPECT_EQ(ResidentPages(fd_, kSize), 0u);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data);
  const size_t with_handle = OpenFdCount();  // the I/O may have added this thread's io_uring ring
  cuFileHandleDeregister(fh_);
  fh_ = nullptr;
  EXPECT_EQ(OpenFdCount(), with_handle - 1) << "the reopening is closed with the handle";
}

TEST_P(ForceODirect, OffByDefaultWritesThroughThePageCache) {
  Open(false);
  const size_t before = OpenFdCount();
  Register();
  EXPECT_EQ(OpenFdCount(), before + 1) << "the handle's own description, buffered";
  const std::vector<uint8_t> data = RandomBytes(kSize, 2);
  WriteAligned(data);
  EXPECT_EQ(ResidentPages(fd_, kSize), kSize / 4096);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data);
}

TEST_P(ForceODirect, UnalignedPiecesStillWork) {
  Open(true);
  std::vector<uint8_t> file = RandomBytes(kSize + 333, 3);
  WriteWholeFile(dir_.File("f"), file);
  Register();
  std::vector<uint8_t> buf(300000);
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 200001, 4095, 7), 200001);
  EXPECT_EQ(0, std::memcmp(buf.data() + 7, file.data() + 4095, 200001));
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 4096, kSize + 100, 0), 233);  // short at end of file
  const std::vector<uint8_t> patch = RandomBytes(70001, 4);
  ASSERT_EQ(cuFileWrite(fh_, patch.data(), 70001, 12345, 0), 70001);
  std::memcpy(file.data() + 12345, patch.data(), 70001);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), file);
}

TEST_P(ForceODirect, ReopenFailingLeavesTheHandleBuffered) {
  Open(true);
  FaultySysOps ops;
  ops.open_err = EMFILE;
  {
    ScopedSysOps scope(&ops);
    Register();
  }
  EXPECT_GE(ops.fired(), 1);
  const std::vector<uint8_t> data = RandomBytes(kSize, 5);
  WriteAligned(data);
  EXPECT_EQ(ResidentPages(fd_, kSize), kSize / 4096) << "buffered, as registered";
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data);
}

INSTANTIATE_TEST_SUITE_P(Engines, ForceODirect, ::testing::Bool(),
                         [](const auto &p) { return p.param ? "uring" : "posix"; });

}  // namespace
}  // namespace ufile::test
