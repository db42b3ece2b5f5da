// SPDX-License-Identifier: Apache-2.0
// Driver lifetime and properties: implicit open on first use, nested
// open/close counts, both close symbols, close waiting for I/O in flight
// (deterministically, through the SysOps seam) and racing 8 readers, handles
// of a closed session, cuFileDriverGetProperties against the config, and the
// live cuFileDriverSet* calls with their ranges. Tests that watch pread
// through SysOps open the driver on the POSIX engine (io_uring bypasses it).
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

// The header maps cuFileDriverClose to cuFileDriverClose_v2; binaries built
// against the old name call the plain symbol, reached here without the macro.
#pragma push_macro("cuFileDriverClose")
#undef cuFileDriverClose
CUfileError_t (*const kPlainClose)(void) = &cuFileDriverClose;
#pragma pop_macro("cuFileDriverClose")

constexpr ssize_t kClosing = -static_cast<ssize_t>(CU_FILE_DRIVER_CLOSING);
constexpr ssize_t kNotRegistered = -static_cast<ssize_t>(CU_FILE_HANDLE_NOT_REGISTERED);

// Opens the driver on the POSIX engine, whose preads go through SysOps.
CUfileOpError OpenPosix() {
  const CUfileError_t e = cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, false);
  if (e.err != CU_FILE_SUCCESS) return e.err;
  return cuFileDriverOpen().err;
}

CUfileDrvProps_t Props() {
  CUfileDrvProps_t p{};
  EXPECT_EQ(cuFileDriverGetProperties(&p).err, CU_FILE_SUCCESS);
  return p;
}

size_t SizeParam(CUFileSizeTConfigParameter_t param) {
  size_t v = 0;
  EXPECT_EQ(cuFileGetParameterSizeT(param, &v).err, CU_FILE_SUCCESS);
  return v;
}

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override { CloseAll(); }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    CloseAll();
  }
  // A file of n random bytes, opened O_RDWR and registered.
  CUfileHandle_t OpenFile(size_t n, std::vector<uint8_t> *data) {
    *data = RandomBytes(n, 7);
    WriteWholeFile(dir_.File("f"), *data);
    const int fd = ::open(dir_.File("f").c_str(), O_RDWR);
    EXPECT_GE(fd, 0);
    fds_.push_back(fd);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = nullptr;
    EXPECT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_SUCCESS);
    return fh;
  }
  TempDir dir_;
  std::vector<int> fds_;
};

TEST_F(DriverTest, FirstUseOpensImplicitly) {
  EXPECT_EQ(cuFileUseCount(), 0);
  std::vector<uint8_t> mem(4096);
  ASSERT_EQ(cuFileBufRegister(mem.data(), mem.size(), 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 1);
  EXPECT_EQ(cuFileBufDeregister(mem.data()).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS) << "an implicit open is closed like one";
  EXPECT_EQ(cuFileUseCount(), 0);
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_DRIVER_NOT_INITIALIZED);
}

TEST_F(DriverTest, NestedOpensCount) {
  for (long n = 1; n <= 3; ++n) {
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    EXPECT_EQ(cuFileUseCount(), n);
  }
  std::vector<uint8_t> mem(4096);
  ASSERT_EQ(cuFileBufRegister(mem.data(), mem.size(), 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 2);
  EXPECT_EQ(kPlainClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 1);
  // Inner closes keep the session: the buffer is still registered.
  EXPECT_EQ(cuFileBufRegister(mem.data(), mem.size(), 0).err, CU_FILE_MEMORY_ALREADY_REGISTERED);
  EXPECT_EQ(cuFileDriverClose_v2().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 0);
  EXPECT_EQ(cuFileDriverClose_v2().err, CU_FILE_DRIVER_NOT_INITIALIZED);
  EXPECT_EQ(kPlainClose().err, CU_FILE_DRIVER_NOT_INITIALIZED);
}

// Two libraries in one process: one uses the API without opening (implicit
// open), the other brackets its work with open and close. The second's close
// must not end the first's session.
TEST_F(DriverTest, ImplicitOpenCountsAsOneUse) {
  std::vector<uint8_t> data;
  CUfileHandle_t fh = OpenFile(8192, &data);  // implicit open
  EXPECT_EQ(cuFileUseCount(), 1);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 2);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 1);
  std::vector<uint8_t> buf(8192);
  EXPECT_EQ(cuFileRead(fh, buf.data(), buf.size(), 0, 0), 8192) << "the handle survived";
  EXPECT_EQ(buf, data);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS) << "the implicit use";
  EXPECT_EQ(cuFileUseCount(), 0);
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_DRIVER_NOT_INITIALIZED);
}

TEST_F(DriverTest, PlainCloseSymbolClosesToo) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_EQ(kPlainClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 0);
}

TEST_F(DriverTest, OldHandlesAfterCloseAndImplicitReopen) {
  std::vector<uint8_t> data;
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileHandle_t fh = OpenFile(8192, &data);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileUseCount(), 0);
  std::vector<uint8_t> buf(8192);
  EXPECT_EQ(cuFileRead(fh, buf.data(), 8192, 0, 0), kNotRegistered);
  EXPECT_EQ(cuFileWrite(fh, buf.data(), 8192, 0, 0), kNotRegistered);
  EXPECT_EQ(cuFileUseCount(), 1) << "the call reopened the library";
  EXPECT_EQ(buf, std::vector<uint8_t>(8192));
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data);
}

// Blocks the first pread until a close is in progress, and records whether
// that close had already returned (it must not have).
class BlockingSysOps : public SysOps {
 public:
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    if (!armed.exchange(false)) return SysOps::Pread(fd, buf, len, off);
    entered = true;
    CUfileDrvProps_t p{};
    while (!close_returned.load() && cuFileDriverGetProperties(&p).err != CU_FILE_DRIVER_CLOSING)
      std::this_thread::yield();
    returned_before_release = close_returned.load();
    open_while_closing = cuFileDriverOpen().err;
    return SysOps::Pread(fd, buf, len, off);
  }
  std::atomic<bool> armed{true}, entered{false}, close_returned{false};
  std::atomic<bool> returned_before_release{false};
  std::atomic<CUfileOpError> open_while_closing{CU_FILE_SUCCESS};
};

TEST_F(DriverTest, CloseWaitsForIoInFlight) {
  std::vector<uint8_t> data;
  ASSERT_EQ(OpenPosix(), CU_FILE_SUCCESS);
  CUfileHandle_t fh = OpenFile(65536, &data);
  BlockingSysOps ops;
  ScopedSysOps scope(&ops);
  std::vector<uint8_t> buf(65536);
  ssize_t got = 0;
  std::atomic<bool> read_done{false};
  std::thread reader([&] {
    got = cuFileRead(fh, buf.data(), buf.size(), 0, 0);
    read_done = true;
  });
  while (!ops.entered.load() && !read_done.load()) std::this_thread::yield();
  if (!ops.entered.load()) {
    reader.join();
    FAIL() << "the read never reached SysOps::Pread";
  }
  CUfileOpError closed = CU_FILE_INTERNAL_ERROR;
  std::thread closer([&] {
    closed = cuFileDriverClose().err;
    ops.close_returned = true;
  });
  reader.join();
  closer.join();
  EXPECT_FALSE(ops.returned_before_release.load()) << "close returned while a read was in flight";
  EXPECT_EQ(ops.open_while_closing.load(), CU_FILE_DRIVER_CLOSING);
  EXPECT_EQ(closed, CU_FILE_SUCCESS);
  ASSERT_EQ(got, 65536) << "the read in flight must complete";
  EXPECT_EQ(buf, data);
  EXPECT_EQ(cuFileUseCount(), 0);
}

TEST_F(DriverTest, CloseWhileEightThreadsRead) {
  constexpr size_t kSize = 4 << 20;
  std::vector<uint8_t> data;
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileHandle_t fh = OpenFile(kSize, &data);
  constexpr int kThreads = 8;
  std::atomic<int> started{0}, bad{0}, ok{0}, refused{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t)
    readers.emplace_back([&, t] {
      std::vector<uint8_t> buf(kSize);
      bool counted = false;
      while (!stop.load()) {
        const ssize_t n = cuFileRead(fh, buf.data(), kSize - t * 4096, t * 4096, 0);
        if (n == static_cast<ssize_t>(kSize - t * 4096)) {
          if (std::memcmp(buf.data(), data.data() + t * 4096, n) != 0) ++bad;  // wrong bytes
          ++ok;
        } else if (n == kClosing || n == kNotRegistered) {
          ++refused;
        } else {
          ++bad;
        }
        if (!counted) {
          counted = true;
          ++started;
        }
        if (n == kNotRegistered) break;  // the session is gone for good
      }
    });
  while (started.load() < kThreads) std::this_thread::yield();
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  stop = true;
  for (auto &t : readers) t.join();
  EXPECT_EQ(bad.load(), 0) << "reads that returned something other than all bytes or a refusal";
  EXPECT_GE(ok.load(), kThreads);
}

TEST_F(DriverTest, PropertiesFollowTheConfig) {
  const std::pair<CUFileSizeTConfigParameter_t, size_t> staged[] = {
      {CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 2048},
      {CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, 16},
      {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, 8192},
      {CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB, 512},
      {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB, 65536},
      {CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64},
      {CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, 250},
  };
  for (auto [param, v] : staged) ASSERT_EQ(cuFileSetParameterSizeT(param, v).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, true).err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, false).err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  const CUfileDrvProps_t p = Props();
  EXPECT_EQ(p.nvfs.major_version, 0u) << "no nvidia-fs";
  EXPECT_EQ(p.nvfs.minor_version, 0u);
  EXPECT_EQ(p.nvfs.max_direct_io_size, 2048u);
  EXPECT_EQ(p.nvfs.poll_thresh_size, 16u);
  EXPECT_EQ(p.nvfs.dstatusflags, 0u) << "no filesystem is served through nvidia-fs";
  EXPECT_EQ(p.nvfs.dcontrolflags, 1u << CU_FILE_USE_POLL_MODE);
  EXPECT_EQ(p.max_device_cache_size, 8192u);
  EXPECT_EQ(p.per_buffer_cache_size, 512u);
  EXPECT_EQ(p.max_device_pinned_mem_size, 65536u);
  EXPECT_EQ(p.max_batch_io_size, 64u);
  EXPECT_EQ(p.max_batch_io_timeout_msecs, 250u);
  EXPECT_NE(p.fflags & (1u << CU_FILE_PARALLEL_IO_SUPPORTED), 0u);
  EXPECT_EQ(p.fflags & (1u << CU_FILE_DYN_ROUTING_SUPPORTED), 0u) << "no dynamic routing";
  EXPECT_EQ(p.fflags & ~0xFu, 0u) << "bits beyond CUfileFeatureFlags_t";
}

TEST_F(DriverTest, DefaultPropertiesMatchTheRunningConfig) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  const CUfileDrvProps_t p = Props();
  EXPECT_EQ(p.nvfs.max_direct_io_size, SizeParam(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB));
  EXPECT_EQ(p.nvfs.poll_thresh_size, SizeParam(CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB));
  EXPECT_EQ(p.max_device_cache_size, SizeParam(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB));
  EXPECT_EQ(p.max_device_pinned_mem_size,
            SizeParam(CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB));
  EXPECT_EQ(p.max_batch_io_size, SizeParam(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE));
  bool poll = false, compat = false;
  ASSERT_EQ(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, &poll).err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, &compat).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(p.nvfs.dcontrolflags, (poll ? 1u << CU_FILE_USE_POLL_MODE : 0u) |
                                      (compat ? 1u << CU_FILE_ALLOW_COMPAT_MODE : 0u));
}

TEST_F(DriverTest, LiveSettersBeforeOpenAreNotInitialized) {
  EXPECT_EQ(cuFileDriverSetPollMode(true, 8).err, CU_FILE_DRIVER_NOT_INITIALIZED);
  EXPECT_EQ(cuFileDriverSetMaxDirectIOSize(1024).err, CU_FILE_DRIVER_NOT_INITIALIZED);
  EXPECT_EQ(cuFileDriverSetMaxCacheSize(1024).err, CU_FILE_DRIVER_NOT_INITIALIZED);
  EXPECT_EQ(cuFileDriverSetMaxPinnedMemSize(1024).err, CU_FILE_DRIVER_NOT_INITIALIZED);
  EXPECT_EQ(cuFileUseCount(), 0) << "a refused setter must not open the library";
}

TEST_F(DriverTest, LiveSettersShowInProperties) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverSetMaxDirectIOSize(512).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverSetMaxCacheSize(4096).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverSetMaxPinnedMemSize(8192).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverSetPollMode(true, 32).err, CU_FILE_SUCCESS);
  CUfileDrvProps_t p = Props();
  EXPECT_EQ(p.nvfs.max_direct_io_size, 512u);
  EXPECT_EQ(p.max_device_cache_size, 4096u);
  EXPECT_EQ(p.max_device_pinned_mem_size, 8192u);
  EXPECT_EQ(p.nvfs.poll_thresh_size, 32u);
  EXPECT_NE(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0u);
  ASSERT_EQ(cuFileDriverSetPollMode(false, 8).err, CU_FILE_SUCCESS);
  p = Props();
  EXPECT_EQ(p.nvfs.poll_thresh_size, 8u);
  EXPECT_EQ(p.nvfs.dcontrolflags & (1u << CU_FILE_USE_POLL_MODE), 0u);
  // Live values last for the session: the next open starts from the config.
  const size_t configured = SizeParam(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB);
  CloseAll();
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_EQ(Props().nvfs.max_direct_io_size, configured);
}

TEST_F(DriverTest, LiveSettersOutOfRangeAreUnsupportedLimit) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  auto poll = +[](size_t v) { return cuFileDriverSetPollMode(true, v); };
  const std::pair<CUFileSizeTConfigParameter_t, CUfileError_t (*)(size_t)> setters[] = {
      {CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, poll},
      {CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, cuFileDriverSetMaxDirectIOSize},
      {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, cuFileDriverSetMaxCacheSize},
      {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB, cuFileDriverSetMaxPinnedMemSize},
  };
  for (auto [param, set] : setters) {
    SCOPED_TRACE(::testing::Message() << "param " << param);
    size_t lo = 0, hi = 0;
    ASSERT_EQ(cuFileGetParameterMinMaxValue(param, &lo, &hi).err, CU_FILE_SUCCESS);
    ASSERT_LE(lo, hi);
    const CUfileDrvProps_t before = Props();
    if (lo > 0) {
      EXPECT_EQ(set(lo - 1).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    }
    EXPECT_EQ(set(hi + 1).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    EXPECT_EQ(set(SIZE_MAX).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
    const CUfileDrvProps_t after = Props();
    EXPECT_EQ(0, std::memcmp(&before, &after, sizeof before)) << "a refused value was applied";
    EXPECT_EQ(set(lo).err, CU_FILE_SUCCESS);
    EXPECT_EQ(set(hi).err, CU_FILE_SUCCESS);
  }
}

// Records the largest pread.
class CountingSysOps : public SysOps {
 public:
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    size_t seen = largest.load();
    while (len > seen && !largest.compare_exchange_weak(seen, len)) {
    }
    ++calls;
    return SysOps::Pread(fd, buf, len, off);
  }
  std::atomic<size_t> largest{0};
  std::atomic<int> calls{0};
};

TEST_F(DriverTest, LiveMaxDirectIoSizeBoundsTheChunks) {
  std::vector<uint8_t> data;
  ASSERT_EQ(OpenPosix(), CU_FILE_SUCCESS);
  CUfileHandle_t fh = OpenFile(4 << 20, &data);
  ASSERT_EQ(cuFileDriverSetMaxDirectIOSize(64).err, CU_FILE_SUCCESS);
  CountingSysOps ops;
  ScopedSysOps scope(&ops);
  std::vector<uint8_t> buf(4 << 20);
  ASSERT_EQ(cuFileRead(fh, buf.data(), buf.size(), 0, 0), 4 << 20);
  EXPECT_EQ(buf, data);
  EXPECT_LE(ops.largest.load(), 64u * 1024);
  EXPECT_GE(ops.calls.load(), 64);
}

}  // namespace
}  // namespace ufile::test
