// SPDX-License-Identifier: Apache-2.0
// CU_FILE_HANDLE_TYPE_USERSPACE_FS: I/O through CUfileFSOps_t callbacks over
// an in-memory file. Byte-exact reads and writes at offsets (split into
// chunks that may run on several threads), short callback counts continued,
// negative errnos returned as -1 with errno, the registrations refused, and
// a callback that closes the driver (must not hang; run in a child process).
#include <cufile.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace ufile::test {
namespace {

// The "filesystem": a byte vector behind a mutex (callbacks run on several
// I/O threads at once), with knobs for misbehaviour.
struct MemFs {
  std::mutex mu;
  std::vector<uint8_t> data;
  size_t max_per_call = SIZE_MAX;  // short counts
  ssize_t fail_with = 0;           // returned instead of a count when set
  off_t fail_at = -1;              // ... only for calls covering this offset
  int eagain_first = 0;            // this many leading calls return -EAGAIN
  std::atomic<int> reads{0}, writes{0};
  void *seen_handle = nullptr;

  ssize_t Fault(size_t n, loff_t off) {
    if (eagain_first > 0) {
      --eagain_first;
      return -EAGAIN;
    }
    if (fail_with && (fail_at < 0 || (off <= fail_at && fail_at < off + static_cast<loff_t>(n))))
      return fail_with;
    return 0;
  }
};

ssize_t FsRead(void *h, char *buf, size_t n, loff_t off, cufileRDMAInfo_t *) {
  auto *fs = static_cast<MemFs *>(h);
  ++fs->reads;
  std::lock_guard<std::mutex> lock(fs->mu);
  fs->seen_handle = h;
  if (ssize_t f = fs->Fault(n, off)) return f;
  if (off < 0) return -EINVAL;
  if (static_cast<size_t>(off) >= fs->data.size()) return 0;
  n = std::min({n, fs->data.size() - static_cast<size_t>(off), fs->max_per_call});
  std::memcpy(buf, fs->data.data() + off, n);
  return static_cast<ssize_t>(n);
}

ssize_t FsWrite(void *h, const char *buf, size_t n, loff_t off, cufileRDMAInfo_t *) {
  auto *fs = static_cast<MemFs *>(h);
  ++fs->writes;
  std::lock_guard<std::mutex> lock(fs->mu);
  if (ssize_t f = fs->Fault(n, off)) return f;
  if (off < 0) return -EINVAL;
  n = std::min(n, fs->max_per_call);
  if (fs->data.size() < static_cast<size_t>(off) + n) fs->data.resize(off + n, 0);
  std::memcpy(fs->data.data() + off, buf, n);
  return static_cast<ssize_t>(n);
}

class FsOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_.data = RandomBytes(kFile, 1);
    ops_.read = FsRead;
    ops_.write = FsWrite;
    ASSERT_EQ(Register(&ops_, &fh_), CU_FILE_SUCCESS);
  }
  void TearDown() override {
    cuFileHandleDeregister(fh_);
    CloseAll();
  }
  CUfileOpError Register(const CUfileFSOps_t *ops, CUfileHandle_t *fh) {
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
    d.handle.handle = &fs_;
    d.fs_ops = ops;
    return cuFileHandleRegister(fh, &d).err;
  }
  static constexpr size_t kFile = (5 << 20) + 77;
  MemFs fs_;
  CUfileFSOps_t ops_{};
  CUfileHandle_t fh_ = nullptr;
};

TEST_F(FsOpsTest, ReadsAreByteExactAtOffsets) {
  const std::vector<uint8_t> want = fs_.data;
  for (auto [size, off] :
       {std::pair<size_t, off_t>{1, 0}, {4096, 4095}, {(3 << 20) + 5, 999}, {kFile, 0}}) {
    SCOPED_TRACE(::testing::Message() << size << " bytes at " << off);
    std::vector<uint8_t> buf = RandomBytes(size + 20, 2);
    const std::vector<uint8_t> buf0 = buf;
    ASSERT_EQ(cuFileRead(fh_, buf.data(), size, off, 10), static_cast<ssize_t>(size));
    EXPECT_EQ(0, std::memcmp(buf.data() + 10, want.data() + off, size));
    EXPECT_EQ(0, std::memcmp(buf.data(), buf0.data(), 10));
    EXPECT_EQ(0, std::memcmp(buf.data() + 10 + size, buf0.data() + 10 + size, 10));
  }
  EXPECT_EQ(fs_.seen_handle, &fs_) << "the callback gets descr.handle.handle";
  // Short at end of file, 0 past it.
  std::vector<uint8_t> buf(8192);
  EXPECT_EQ(cuFileRead(fh_, buf.data(), 8192, kFile - 100, 0), 100);
  EXPECT_EQ(0, std::memcmp(buf.data(), want.data() + kFile - 100, 100));
  EXPECT_EQ(cuFileRead(fh_, buf.data(), 8192, kFile + 1, 0), 0);
  EXPECT_EQ(fs_.data, want) << "reads changed the file";
}

TEST_F(FsOpsTest, WritesAreByteExactAtOffsets) {
  std::vector<uint8_t> want = fs_.data;
  const std::vector<uint8_t> src = RandomBytes((3 << 20) + 11, 3);
  ASSERT_EQ(cuFileWrite(fh_, src.data(), (3 << 20) + 1, 12345, 10), (3 << 20) + 1);
  std::memcpy(want.data() + 12345, src.data() + 10, (3 << 20) + 1);
  // Past end of file: the file grows.
  ASSERT_EQ(cuFileWrite(fh_, src.data(), 1000, kFile + 5, 0), 1000);
  want.resize(kFile + 5, 0);
  want.insert(want.end(), src.begin(), src.begin() + 1000);
  EXPECT_EQ(fs_.data, want);
  EXPECT_EQ(src, RandomBytes((3 << 20) + 11, 3)) << "a write changed its source";
}

TEST_F(FsOpsTest, ShortCountsAreContinued) {
  fs_.max_per_call = 1000;
  const std::vector<uint8_t> want = fs_.data;
  std::vector<uint8_t> buf(100000);
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 100000, 333, 0), 100000);
  EXPECT_EQ(0, std::memcmp(buf.data(), want.data() + 333, 100000));
  EXPECT_GE(fs_.reads.load(), 100);
  const std::vector<uint8_t> src = RandomBytes(50000, 4);
  ASSERT_EQ(cuFileWrite(fh_, src.data(), 50000, 7, 0), 50000);
  EXPECT_EQ(0, std::memcmp(fs_.data.data() + 7, src.data(), 50000));
  EXPECT_GE(fs_.writes.load(), 50);
}

TEST_F(FsOpsTest, NegativeErrnoIsMinusOneWithErrno) {
  std::vector<uint8_t> buf = RandomBytes(3 << 20, 5);
  const std::vector<uint8_t> buf0 = buf;
  const std::vector<uint8_t> file0 = fs_.data;
  struct Case {
    ssize_t ret;
    int err;
  } cases[] = {{-EIO, EIO}, {-ENOSPC, ENOSPC}, {-EACCES, EACCES}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.err);
    fs_.fail_with = c.ret;
    fs_.fail_at = (2 << 20) + 10;  // a later chunk of the request
    errno = 0;
    EXPECT_EQ(cuFileRead(fh_, buf.data(), 3 << 20, 0, 0), -1);
    EXPECT_EQ(errno, c.err);
    EXPECT_EQ(fs_.data, file0);
    errno = 0;
    EXPECT_EQ(cuFileWrite(fh_, buf0.data(), 3 << 20, 0, 0), -1);
    EXPECT_EQ(errno, c.err);
    ASSERT_EQ(fs_.data.size(), file0.size());
    EXPECT_TRUE(std::equal(fs_.data.begin() + (3 << 20), fs_.data.end(), file0.begin() + (3 << 20)))
        << "bytes past the range changed";
    fs_.data = file0;  // the range itself is unspecified after a failed write
  }
  fs_.fail_with = 0;
  std::vector<uint8_t> small(10);
  ASSERT_EQ(cuFileRead(fh_, small.data(), 10, 0, 0), 10) << "the handle still works";
}

TEST_F(FsOpsTest, EagainFromACallbackIsRetried) {
  fs_.eagain_first = 5;
  std::vector<uint8_t> buf(4096);
  ASSERT_EQ(cuFileRead(fh_, buf.data(), 4096, 0, 0), 4096);
  EXPECT_EQ(0, std::memcmp(buf.data(), fs_.data.data(), 4096));
}

TEST_F(FsOpsTest, EagainForeverEndsWithEagain) {
  // A callback that never stops saying EAGAIN must not spin forever.
  // (After 5000 calls this fake gives up with EIO, so a missing bound fails
  // the test instead of hanging it.)
  struct Stubborn {
    static ssize_t Read(void *h, char *, size_t, loff_t, cufileRDMAInfo_t *) {
      return ++*static_cast<std::atomic<int> *>(h) > 5000 ? -EIO : -EAGAIN;
    }
  };
  std::atomic<int> calls{0};
  CUfileFSOps_t ops{};
  ops.read = Stubborn::Read;
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
  d.handle.handle = &calls;
  d.fs_ops = &ops;
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_SUCCESS);
  std::vector<uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, 0, 0), -1);
  EXPECT_EQ(errno, EAGAIN) << "retried " << calls.load() << " times";
  cuFileHandleDeregister(fh);
}

TEST_F(FsOpsTest, RegistrationsRefused) {
  CUfileHandle_t fh = reinterpret_cast<CUfileHandle_t>(0x1234);
  EXPECT_EQ(Register(nullptr, &fh), CU_FILE_INVALID_VALUE) << "NULL fs_ops";
  CUfileFSOps_t none{};
  EXPECT_EQ(Register(&none, &fh), CU_FILE_INVALID_VALUE) << "no read, no write";
  EXPECT_EQ(fh, reinterpret_cast<CUfileHandle_t>(0x1234));
}

TEST_F(FsOpsTest, ReadOnlyAndWriteOnlyOps) {
  CUfileFSOps_t ro{};
  ro.read = FsRead;
  CUfileHandle_t rfh = nullptr;
  ASSERT_EQ(Register(&ro, &rfh), CU_FILE_SUCCESS);
  std::vector<uint8_t> buf(4096);
  errno = 0;
  EXPECT_EQ(cuFileWrite(rfh, buf.data(), 4096, 0, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(fs_.writes.load(), 0);
  EXPECT_EQ(cuFileRead(rfh, buf.data(), 4096, 0, 0), 4096);

  CUfileFSOps_t wo{};
  wo.write = FsWrite;
  CUfileHandle_t wfh = nullptr;
  ASSERT_EQ(Register(&wo, &wfh), CU_FILE_SUCCESS);
  errno = 0;
  EXPECT_EQ(cuFileRead(wfh, buf.data(), 4096, 0, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(cuFileWrite(wfh, buf.data(), 4096, 0, 0), 4096);
  cuFileHandleDeregister(rfh);
  cuFileHandleDeregister(wfh);
}

TEST_F(FsOpsTest, SameUserHandleMayBeRegisteredTwice) {
  // No descriptor to deduplicate by: two registrations are two handles.
  CUfileHandle_t second = nullptr;
  ASSERT_EQ(Register(&ops_, &second), CU_FILE_SUCCESS);
  EXPECT_NE(second, fh_);
  cuFileHandleDeregister(second);
  std::vector<uint8_t> buf(16);
  EXPECT_EQ(cuFileRead(fh_, buf.data(), 16, 0, 0), 16);
}

TEST_F(FsOpsTest, WriteCallbackMakingNoProgressIsEio) {
  fs_.max_per_call = 0;  // write returns 0: the file cannot take bytes
  std::vector<uint8_t> src(4096, 7);
  errno = 0;
  EXPECT_EQ(cuFileWrite(fh_, src.data(), 4096, 0, 0), -1);
  EXPECT_EQ(errno, EIO);
}

// Runs in a child process (a death test): a read whose callback closes the
// driver. The close cannot wait for the read it is called from; it must not
// hang either. Exits 0 when the read returned all its bytes, 2 on a hang.
[[noreturn]] void ReadWhoseCallbackClosesTheDriver() {
  CloseAll();
  if (cuFileDriverOpen().err != CU_FILE_SUCCESS) _exit(4);
  struct Cb {
    static ssize_t Read(void *, char *buf, size_t n, loff_t, cufileRDMAInfo_t *) {
      cuFileDriverClose();
      std::memset(buf, 7, n);
      return static_cast<ssize_t>(n);
    }
  };
  static CUfileFSOps_t ops{};
  ops.read = Cb::Read;
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_USERSPACE_FS;
  d.fs_ops = &ops;
  CUfileHandle_t fh = nullptr;
  if (cuFileHandleRegister(&fh, &d).err != CU_FILE_SUCCESS) _exit(5);
  static std::atomic<ssize_t> got{-2};
  static char buf[100];
  std::thread([fh] { got = cuFileRead(fh, buf, sizeof buf, 0, 0); }).detach();
  // A bound, only so that a deadlock ends the child instead of the run.
  for (int i = 0; i < 500 && got.load() == -2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  _exit(got.load() == -2 ? 2 : got.load() == 100 ? 0 : 3);
}

TEST(FsOpsMisuse, CloseFromInsideACallbackDoesNotHang) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ReadWhoseCallbackClosesTheDriver(), ::testing::ExitedWithCode(0), "")
      << "exit 2: cuFileDriverClose called inside a cuFileRead deadlocked";
}

}  // namespace
}  // namespace ufile::test
