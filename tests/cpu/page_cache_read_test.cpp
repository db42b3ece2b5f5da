// SPDX-License-Identifier: Apache-2.0
// Reads through an O_DIRECT handle take what the page cache holds from it
// (ufile.page_cache_reads, on by default) and the rest through O_DIRECT:
// a hot file comes from the cache, a cold one goes to the disk without
// filling the cache, a partly resident one mixes both, faults injected into
// the RWF_NOWAIT read (EAGAIN, short) fall back, and every byte is right.
// Both engines; the key and its environment override turn it off. Small
// batch entries, which run grouped, take the page cache the same way.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/chunk_io.h"
#include "support/batch_run.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

constexpr size_t kSize = 8u << 20;

// Pages of the file's [off, off + len) in the page cache.
size_t ResidentPages(const std::string &path, size_t len, off_t off = 0) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return SIZE_MAX;
  const size_t n = ufile::test::ResidentPages(fd, len, off);
  close(fd);
  return n;
}

// Drops [off, off + len) of the file from the page cache (written back first).
void Evict(const std::string &path, off_t off, size_t len) {
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  fdatasync(fd);
  posix_fadvise(fd, off, static_cast<off_t>(len), POSIX_FADV_DONTNEED);
  close(fd);
}

// Brings [off, off + len) of the file into the page cache.
void Warm(const std::string &path, off_t off, size_t len) {
  const int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<char> buf(len);
  ASSERT_EQ(pread(fd, buf.data(), len, off), static_cast<ssize_t>(len));
  close(fd);
}

// Injects results into the RWF_NOWAIT reads (the POSIX engine's path) and
// can refuse cachestat, as kernels before 6.5 do.
class NowaitFaults : public SysOps {
 public:
  int eagain_calls = 0;       // the first n calls fail with EAGAIN
  size_t short_bytes = 0;     // then every call moves at most this many bytes
  bool no_cachestat = false;  // CachedPages: -ENOSYS
  std::atomic<int> calls{0};

  ssize_t PreadNowait(int fd, void *buf, size_t len, off_t off) override {
    if (++calls <= eagain_calls) {
      errno = EAGAIN;
      return -1;
    }
    if (short_bytes > 0 && len > short_bytes) len = short_bytes;
    return SysOps::PreadNowait(fd, buf, len, off);
  }
  int CachedPages(int fd, off_t off, size_t len, uint64_t *pages) override {
    return no_cachestat ? -ENOSYS : SysOps::CachedPages(fd, off, len, pages);
  }
};

// Counts the bytes copied between a bounce buffer and the caller's memory.
class BounceCount : public SysOps {
 public:
  std::atomic<size_t> bytes{0};
  int CopyCallerMemory(void *dst, const void *src, size_t n) override {
    bytes += n;
    return SysOps::CopyCallerMemory(dst, src, n);
  }
};

class CachedDirectReads : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!DirectIoSupported(dir_.path()))
      GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
    data_ = RandomBytes(kSize, 19);
    WriteWholeFile(path_, data_);
    CloseAll();
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, GetParam()).err,
              CU_FILE_SUCCESS);
    buf_ = static_cast<char *>(std::aligned_alloc(4096, kSize + 4096));
    ASSERT_NE(buf_, nullptr);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    CloseAll();
    std::free(buf_);
  }
  void OpenDirect() {
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    fd_ = open(path_.c_str(), O_RDONLY | O_DIRECT);
    ASSERT_GE(fd_, 0) << std::strerror(errno);
    ASSERT_EQ(RegisterFd(fd_, &fh_), CU_FILE_SUCCESS);
  }
  // Reads [off, off + len) into the buffer; checks every byte.
  void ReadAndCheck(off_t off, size_t len) {
    std::memset(buf_, 0x5A, len);
    ASSERT_EQ(cuFileRead(fh_, buf_, len, off, 0), static_cast<ssize_t>(len));
    ASSERT_EQ(std::memcmp(buf_, data_.data() + off, len), 0) << "bytes differ";
  }

  // Reads [off, off + len) into the buffer at an address off by shift from
  // the alignment (every aligned middle chunk lands unaligned); checks every
  // byte and that the buffer around it is untouched.
  void ReadUnalignedAndCheck(off_t off, size_t len, size_t shift) {
    std::memset(buf_, 0x5A, kSize + 4096);
    ASSERT_EQ(cuFileRead(fh_, buf_ + shift, len, off, 0), static_cast<ssize_t>(len));
    ASSERT_EQ(std::memcmp(buf_ + shift, data_.data() + off, len), 0) << "bytes differ";
    for (size_t i = 0; i < shift; ++i) ASSERT_EQ(buf_[i], 0x5A) << "byte before the buffer";
    ASSERT_EQ(buf_[shift + len], 0x5A) << "byte after the buffer";
  }

  // Reads kEntries grouped batch entries of kEntry bytes, kStride apart
  // from off (block-aligned: the group's O_DIRECT path); checks every byte.
  static constexpr unsigned kEntries = 16;
  static constexpr size_t kEntry = 64 << 10, kStride = 512 << 10;
  void BatchReadAndCheck(off_t off) {
    CUfileBatchHandle_t batch = nullptr;
    ASSERT_EQ(cuFileBatchIOSetUp(&batch, kEntries).err, CU_FILE_SUCCESS);
    std::vector<CUfileIOParams_t> p(kEntries);
    for (unsigned i = 0; i < kEntries; ++i) {
      p[i].mode = CUFILE_BATCH;
      p[i].opcode = CUFILE_READ;
      p[i].fh = fh_;
      p[i].u.batch.devPtr_base = buf_;
      p[i].u.batch.size = kEntry;
      p[i].u.batch.file_offset = off + static_cast<off_t>(i * kStride);
      p[i].u.batch.devPtr_offset = static_cast<off_t>(i * kEntry);
    }
    std::memset(buf_, 0x5A, kEntries * kEntry);
    const std::vector<CUfileIOEvents_t> ev = RunBatchParams(batch, p);
    cuFileBatchIODestroy(batch);
    for (const CUfileIOEvents_t &e : ev) {
      ASSERT_EQ(e.status, CUFILE_COMPLETE);
      ASSERT_EQ(e.ret, kEntry);
    }
    for (unsigned i = 0; i < kEntries; ++i)
      ASSERT_EQ(std::memcmp(buf_ + i * kEntry, data_.data() + off + i * kStride, kEntry), 0)
          << "entry " << i << ": bytes differ";
  }

  TempDir dir_;
  std::string path_ = dir_.File("f");
  std::vector<uint8_t> data_;
  char *buf_ = nullptr;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
};

TEST_P(CachedDirectReads, AHotFileComesFromThePageCache) {
  Warm(path_, 0, kSize);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  ReadAndCheck(4096, 4096);          // one page, not split
  ReadAndCheck(100, kSize - 1000);   // unaligned edges through the buffered descriptor
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_GE(after.cached_bytes - before.cached_bytes, 2 * kSize - 8192);
  EXPECT_EQ(after.direct_fallbacks, before.direct_fallbacks);
}

// A buffered read needs no alignment, so the page cache's bytes go straight
// into an unaligned buffer: no bounce, which would copy every byte twice.
TEST_P(CachedDirectReads, AHotFileGoesStraightIntoAnUnalignedBuffer) {
  Warm(path_, 0, kSize);
  BounceCount bounce;
  ScopedSysOps scope(&bounce);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadUnalignedAndCheck(0, kSize, 8);
  ReadUnalignedAndCheck(4096, 3u << 20, 100);
  ReadUnalignedAndCheck(8192, 256 << 10, 4000);  // below a split request: one chunk, probed
  EXPECT_EQ(bounce.bytes.load(), 0u) << "cached bytes went through the bounce buffer";
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_GE(after.cached_bytes - before.cached_bytes, kSize + (3u << 20));
  EXPECT_EQ(after.direct_fallbacks, before.direct_fallbacks);
}

// What the page cache lacks goes through O_DIRECT into the bounce buffer,
// from the last aligned byte taken from the cache.
TEST_P(CachedDirectReads, APartlyResidentFileIntoAnUnalignedBufferBouncesOnlyTheRest) {
  Evict(path_, 0, kSize);
  Warm(path_, 0, 3u << 20);
  Evict(path_, 3u << 20, kSize - (3u << 20));
  Evict(path_, (1u << 20) + 8192, 8192);  // a hole in the first MiB
  if (ResidentPages(path_, 4096, 4u << 20) != 0 || ResidentPages(path_, 4096, kSize - 4096) != 0)
    GTEST_SKIP() << "this file system keeps evicted pages";
  BounceCount bounce;
  ScopedSysOps scope(&bounce);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadUnalignedAndCheck(0, kSize, 8);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_GT(after.cached_bytes, before.cached_bytes);
  EXPECT_GT(after.direct_fallbacks, before.direct_fallbacks);
  const size_t cached = after.cached_bytes - before.cached_bytes;
  EXPECT_GT(bounce.bytes.load(), 0u);
  // Each chunk re-reads at most the block it stopped in.
  EXPECT_LE(cached + bounce.bytes.load(), kSize + (kSize >> 20) * 4096)
      << cached << " bytes from the cache, " << bounce.bytes.load() << " through the bounce";
}

TEST_P(CachedDirectReads, AColdFileGoesToTheDiskAndStaysCold) {
  Evict(path_, 0, kSize);
  if (ResidentPages(path_, kSize) != 0) GTEST_SKIP() << "this file system keeps the pages";
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  ReadAndCheck(1 << 20, 4096);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(ResidentPages(path_, kSize), 0u) << "no readahead into the page cache";
}

TEST_P(CachedDirectReads, APartlyResidentFileMixesBothAndEveryByteIsRight) {
  Evict(path_, 0, kSize);
  Warm(path_, 0, 3u << 20);               // the first 3 MiB ...
  Warm(path_, 5u << 20, 1u << 20);        // ... and 5-6 MiB
  Evict(path_, 3u << 20, 2u << 20);       // not what readahead brought in beside them
  Evict(path_, 6u << 20, 2u << 20);
  Evict(path_, (1u << 20) + 8192, 8192);  // with a hole in the first MiB
  // The middle and last pages cold: else the request looks resident and is
  // read as buffered, with no O_DIRECT part.
  if (ResidentPages(path_, 4096, 4u << 20) != 0 || ResidentPages(path_, 4096, kSize - 4096) != 0)
    GTEST_SKIP() << "this file system keeps evicted pages";
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  ReadAndCheck(4096, 2u << 20);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_GT(after.cached_bytes, before.cached_bytes);
  EXPECT_GT(after.direct_fallbacks, before.direct_fallbacks);
}

TEST_P(CachedDirectReads, TheKeyTurnsItOff) {
  WriteTextFile(dir_.File("c.json"), R"({ "ufile": { "page_cache_reads": false } })");
  ScopedEnv json("CUFILE_ENV_PATH_JSON", dir_.File("c.json"));
  Warm(path_, 0, kSize);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  EXPECT_EQ(PageCacheReads().cached_bytes, before.cached_bytes);
}

TEST_P(CachedDirectReads, TheEnvironmentTurnsItOff) {
  ScopedEnv env("UFILE_PAGE_CACHE_READS", "off");
  Warm(path_, 0, kSize);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  EXPECT_EQ(PageCacheReads().cached_bytes, before.cached_bytes);
}

TEST_P(CachedDirectReads, GroupedBatchEntriesOfAHotFileComeFromThePageCache) {
  Warm(path_, 0, kSize);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  BatchReadAndCheck(0);
  BatchReadAndCheck(4096);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_EQ(after.cached_bytes - before.cached_bytes, 2 * kEntries * kEntry);
  EXPECT_EQ(after.direct_fallbacks, before.direct_fallbacks);
}

TEST_P(CachedDirectReads, GroupedBatchEntriesOfAColdFileGoToTheDiskAndStayCold) {
  Evict(path_, 0, kSize);
  if (ResidentPages(path_, kSize) != 0) GTEST_SKIP() << "this file system keeps the pages";
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  BatchReadAndCheck(0);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(after.direct_fallbacks - before.direct_fallbacks, kEntries);
  EXPECT_EQ(ResidentPages(path_, kSize), 0u) << "no readahead into the page cache";
}

INSTANTIATE_TEST_SUITE_P(Engines, CachedDirectReads, ::testing::Bool(),
                         [](const auto &p) { return p.param ? "uring" : "posix"; });

// Injected results need the POSIX engine: io_uring's come in its CQEs.
class PageCacheReadFaults : public CachedDirectReads {};

TEST_P(PageCacheReadFaults, EagainFallsBackToODirect) {
  Warm(path_, 0, kSize);
  NowaitFaults faults;
  faults.eagain_calls = 1 << 30;
  ScopedSysOps scope(&faults);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_GT(faults.calls.load(), 0);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_GT(after.direct_fallbacks, before.direct_fallbacks);
}

TEST_P(PageCacheReadFaults, ShortReadsGoOnFromTheLastAlignedByte) {
  Warm(path_, 0, kSize);
  NowaitFaults faults;
  faults.short_bytes = 5000;  // not a multiple of the block: the rest re-reads 904 bytes
  ScopedSysOps scope(&faults);
  OpenDirect();
  const PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  ReadAndCheck(8192, 3u << 20);
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_GT(after.cached_bytes, before.cached_bytes);
  EXPECT_GT(after.direct_fallbacks, before.direct_fallbacks);
}

TEST_P(PageCacheReadFaults, GroupedBatchEntriesGoOnThroughODirect) {
  Warm(path_, 0, kSize);
  NowaitFaults faults;
  faults.short_bytes = 5000;  // every entry: 4096 bytes from the cache, the rest O_DIRECT
  ScopedSysOps scope(&faults);
  OpenDirect();
  PageCacheReadCounts before = PageCacheReads();
  BatchReadAndCheck(8192);
  PageCacheReadCounts after = PageCacheReads();
  EXPECT_GT(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(after.direct_fallbacks - before.direct_fallbacks, kEntries);
  faults.eagain_calls = 1 << 30;  // nothing from the cache
  before = after;
  BatchReadAndCheck(0);
  after = PageCacheReads();
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(after.direct_fallbacks - before.direct_fallbacks, kEntries);
}

TEST_P(PageCacheReadFaults, WithoutCachestatTheNowaitReadDecides) {
  NowaitFaults faults;
  faults.no_cachestat = true;
  ScopedSysOps scope(&faults);
  Warm(path_, 0, kSize);
  OpenDirect();
  PageCacheReadCounts before = PageCacheReads();
  ReadAndCheck(0, kSize);
  EXPECT_GE(PageCacheReads().cached_bytes - before.cached_bytes, kSize);
  Evict(path_, 0, kSize);
  before = PageCacheReads();
  ReadAndCheck(0, kSize);
  EXPECT_GT(PageCacheReads().direct_fallbacks, before.direct_fallbacks);
}

INSTANTIATE_TEST_SUITE_P(Posix, PageCacheReadFaults, ::testing::Values(false),
                         [](const auto &) { return "posix"; });

}  // namespace
}  // namespace ufile::test
