// SPDX-License-Identifier: Apache-2.0
// How a split request is cut, seen through the SysOps seam (the POSIX engine
// does one pread/pwrite per chunk): a buffered read over 16 participants
// moves 1 MiB chunks; an O_DIRECT read of a cold file, or write, moves
// chunks of at least 4 MiB, since the kernel already spreads one large direct
// transfer over the device's queue and every chunk costs a submission and a
// wake-up. An O_DIRECT read of a hot file is cut like a buffered one, its
// chunks read from the page cache (RWF_NOWAIT).
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kSize = 16 * kMiB;

// Counts the lengths of the preads and pwrites it passes on.
class RecordingSysOps : public SysOps {
 public:
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    Note(&reads_, len);
    return SysOps::Pread(fd, buf, len, off);
  }
  ssize_t PreadNowait(int fd, void *buf, size_t len, off_t off) override {
    Note(&nowait_, len);
    return SysOps::PreadNowait(fd, buf, len, off);
  }
  ssize_t Pwrite(int fd, const void *buf, size_t len, off_t off) override {
    Note(&writes_, len);
    return SysOps::Pwrite(fd, buf, len, off);
  }
  // Calls per length since the last Take.
  std::map<size_t, int> TakeReads() { return Take(&reads_); }
  std::map<size_t, int> TakeWrites() { return Take(&writes_); }
  std::map<size_t, int> TakeNowaitReads() { return Take(&nowait_); }

 private:
  void Note(std::map<size_t, int> *m, size_t len) {
    std::lock_guard<std::mutex> lock(mu_);
    ++(*m)[len];
  }
  std::map<size_t, int> Take(std::map<size_t, int> *m) {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<size_t, int> out;
    out.swap(*m);
    return out;
  }
  std::mutex mu_;
  std::map<size_t, int> reads_, writes_, nowait_;
};

class ChunkSize : public ::testing::Test {
 protected:
  void SetUp() override {
    CloseAll();  // staged parameters apply at the next open
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 16384).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 4).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 16).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, false).err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    data_ = RandomBytes(kSize, 11);
    WriteWholeFile(dir_.File("f"), data_);
    mem_ = static_cast<uint8_t *>(std::aligned_alloc(4096, kSize));
    ASSERT_NE(mem_, nullptr);
    prev_ = SysOps::Install(&ops_);
  }
  void TearDown() override {
    for (CUfileHandle_t fh : handles_) cuFileHandleDeregister(fh);
    for (int fd : fds_) close(fd);
    SysOps::Install(prev_);
    CloseAll();
    std::free(mem_);
  }
  // Drops the file from the page cache; skips where the file system keeps it.
  void Evict() {
    const int fd = open(dir_.File("f").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    uint64_t pages = 1;
    const int rc = SysOps().CachedPages(fd, 0, kSize, &pages);
    close(fd);
    if (rc == 0 && pages > 0) GTEST_SKIP() << "this file system keeps the file in the page cache";
  }
  CUfileHandle_t Open(int flags) {
    const int fd = open(dir_.File("f").c_str(), flags);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    fds_.push_back(fd);
    CUfileHandle_t fh = nullptr;
    EXPECT_EQ(RegisterFd(fd, &fh), CU_FILE_SUCCESS);
    handles_.push_back(fh);
    return fh;
  }

  TempDir dir_;
  std::vector<uint8_t> data_;
  uint8_t *mem_ = nullptr;
  RecordingSysOps ops_;
  SysOps *prev_ = nullptr;
  std::vector<int> fds_;
  std::vector<CUfileHandle_t> handles_;
};

TEST_F(ChunkSize, BufferedReadsAreSpreadInOneMiBChunks) {
  CUfileHandle_t fh = Open(O_RDONLY);
  ASSERT_EQ(cuFileRead(fh, mem_, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(0, std::memcmp(mem_, data_.data(), kSize));
  EXPECT_EQ(ops_.TakeReads(), (std::map<size_t, int>{{kMiB, 16}}));
}

TEST_F(ChunkSize, DirectReadsAndWritesUseChunksOfAtLeastFourMiB) {
  if (!DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  CUfileHandle_t fh = Open(O_RDWR | O_DIRECT);
  Evict();
  ASSERT_EQ(cuFileRead(fh, mem_, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(0, std::memcmp(mem_, data_.data(), kSize));
  EXPECT_EQ(ops_.TakeReads(), (std::map<size_t, int>{{4 * kMiB, 4}}));
  EXPECT_EQ(ops_.TakeNowaitReads(), (std::map<size_t, int>{})) << "the probe said cold";

  std::vector<uint8_t> next = RandomBytes(kSize, 12);
  std::memcpy(mem_, next.data(), kSize);
  ASSERT_EQ(cuFileWrite(fh, mem_, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(ops_.TakeWrites(), (std::map<size_t, int>{{4 * kMiB, 4}}));
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), next);
}

TEST_F(ChunkSize, HotDirectReadsAreCutLikeBufferedOnes) {
  if (!DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  CUfileHandle_t fh = Open(O_RDONLY | O_DIRECT);
  ASSERT_EQ(cuFileRead(fh, mem_, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(0, std::memcmp(mem_, data_.data(), kSize));
  EXPECT_EQ(ops_.TakeNowaitReads(), (std::map<size_t, int>{{kMiB, 16}}));
  EXPECT_EQ(ops_.TakeReads(), (std::map<size_t, int>{}));
}

}  // namespace
}  // namespace ufile::test
