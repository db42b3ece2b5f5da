// SPDX-License-Identifier: Apache-2.0
// Many threads on one handle and one registered buffer, each writing and
// reading back its own region at its own (unaligned) file offset, buffered
// and O_DIRECT, on the io_uring and the POSIX engine, repeated; and many
// threads registering and deregistering
// handles and buffers at once, including races for the same descriptor and
// overlapping memory (exactly one winner); and threads racing for an O_DIRECT
// handle's buffered descriptor (opened once).
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

CUfileOpError Register(int fd, CUfileHandle_t *fh) {
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  return cuFileHandleRegister(fh, &d).err;
}

// Runs fn(t) on n threads started together.
template <class Fn>
void OnThreads(int n, Fn fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < n) std::this_thread::yield();
      fn(t);
    });
  for (auto &th : threads) th.join();
}

// {O_DIRECT, io_uring preferred}
class SharedHandle : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  void SetUp() override {
    CloseAll();  // the engine is chosen at open
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, std::get<1>(GetParam())).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  }
  void TearDown() override { CloseAll(); }
  TempDir dir_;
};

TEST_P(SharedHandle, TenThreadsOwnRegionsAreByteExact) {
  const bool direct = std::get<0>(GetParam());
  if (direct && !DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  constexpr int kThreads = 10, kReps = 4;
  constexpr size_t kRegion = (1 << 20) + 123;  // odd: regions share file blocks
  // Thread t owns file bytes [t * kStride + t * 7, + kRegion): neighbours
  // share a 4 KiB block at most, never a byte.
  constexpr size_t kStride = kRegion + 4096;
  auto file_off = [](int t) { return static_cast<off_t>(t * kStride + t * 7); };
  const size_t file_size = file_off(kThreads) + kRegion;
  std::vector<uint8_t> file = RandomBytes(file_size, 1);
  WriteWholeFile(dir_.File("f"), file);
  const int fd = ::open(dir_.File("f").c_str(), O_RDWR | (direct ? O_DIRECT : 0));
  ASSERT_GE(fd, 0);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  // One registered buffer; thread t uses [t * kRegion + 64, + kRegion).
  const size_t mem_size = kThreads * kRegion + 128;
  auto *mem = static_cast<uint8_t *>(std::aligned_alloc(4096, (mem_size + 4095) / 4096 * 4096));
  ASSERT_NE(mem, nullptr);
  ASSERT_EQ(cuFileBufRegister(mem, mem_size, 0).err, CU_FILE_SUCCESS);
  auto buf_off = [](int t) { return static_cast<off_t>(64 + t * kRegion); };

  for (int rep = 0; rep < kReps; ++rep) {
    std::atomic<int> bad{0};
    OnThreads(kThreads, [&](int t) {
      const std::vector<uint8_t> mine = RandomBytes(kRegion, 100 * rep + t);
      uint8_t *region = mem + buf_off(t);
      std::memcpy(region, mine.data(), kRegion);
      if (cuFileWrite(fh, mem, kRegion, file_off(t), buf_off(t)) != kRegion) ++bad;
      std::memset(region, 0, kRegion);
      if (cuFileRead(fh, mem, kRegion, file_off(t), buf_off(t)) != kRegion) ++bad;
      if (std::memcmp(region, mine.data(), kRegion) != 0) ++bad;
    });
    ASSERT_EQ(bad.load(), 0) << "rep " << rep;
    for (int t = 0; t < kThreads; ++t) {
      const std::vector<uint8_t> mine = RandomBytes(kRegion, 100 * rep + t);
      std::memcpy(file.data() + file_off(t), mine.data(), kRegion);
    }
    ASSERT_TRUE(ReadWholeFile(dir_.File("f")) == file) << "rep " << rep << ": file differs";
  }
  EXPECT_EQ(cuFileBufDeregister(mem).err, CU_FILE_SUCCESS);
  cuFileHandleDeregister(fh);
  ::close(fd);
  std::free(mem);
}

INSTANTIATE_TEST_SUITE_P(FdEngine, SharedHandle,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto &p) {
                           return std::string(std::get<0>(p.param) ? "Direct" : "Buffered") +
                                  (std::get<1>(p.param) ? "Uring" : "Posix");
                         });

class Registration : public ::testing::Test {
 protected:
  void TearDown() override { CloseAll(); }
  TempDir dir_;
};

TEST_F(Registration, ManyThreadsRegisterAndDeregisterTheirOwn) {
  constexpr int kThreads = 8, kReps = 200;
  std::atomic<int> bad{0};
  OnThreads(kThreads, [&](int t) {
    const std::string path = dir_.File("f" + std::to_string(t));
    const std::vector<uint8_t> data = RandomBytes(512, t);
    WriteWholeFile(path, data);
    const int fd = ::open(path.c_str(), O_RDWR);
    std::vector<uint8_t> mem(4096);
    for (int rep = 0; rep < kReps; ++rep) {
      CUfileHandle_t fh = nullptr;
      if (Register(fd, &fh) != CU_FILE_SUCCESS) ++bad;
      if (cuFileBufRegister(mem.data(), mem.size(), 0).err != CU_FILE_SUCCESS) ++bad;
      if (cuFileRead(fh, mem.data(), 512, 0, 7) != 512) ++bad;
      if (std::memcmp(mem.data() + 7, data.data(), 512) != 0) ++bad;
      if (cuFileBufDeregister(mem.data()).err != CU_FILE_SUCCESS) ++bad;
      cuFileHandleDeregister(fh);
    }
    ::close(fd);
  });
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(Registration, RaceForTheSameDescriptorHasOneWinner) {
  WriteWholeFile(dir_.File("f"), RandomBytes(100, 1));
  const int fd = ::open(dir_.File("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  constexpr int kThreads = 8;
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<CUfileHandle_t> fh(kThreads, nullptr);
    std::atomic<int> won{0}, lost{0}, other{0};
    OnThreads(kThreads, [&](int t) {
      const CUfileOpError e = Register(fd, &fh[t]);
      (e == CU_FILE_SUCCESS ? won : e == CU_FILE_HANDLE_ALREADY_REGISTERED ? lost : other)++;
    });
    ASSERT_EQ(won.load(), 1) << "rep " << rep;
    ASSERT_EQ(lost.load(), kThreads - 1);
    ASSERT_EQ(other.load(), 0);
    for (CUfileHandle_t h : fh)
      if (h) cuFileHandleDeregister(h);
  }
  ::close(fd);
}

TEST_F(Registration, RaceForOverlappingMemoryHasOneWinner) {
  std::vector<uint8_t> mem(1 << 16);
  constexpr int kThreads = 8;
  for (int rep = 0; rep < 50; ++rep) {
    std::atomic<int> won{0}, lost{0}, other{0};
    std::atomic<int> winner{-1};
    // Thread t registers [t * 1000, t * 1000 + 9000): every pair overlaps.
    OnThreads(kThreads, [&](int t) {
      const CUfileOpError e = cuFileBufRegister(mem.data() + t * 1000, 9000, 0).err;
      if (e == CU_FILE_SUCCESS) winner = t;
      (e == CU_FILE_SUCCESS ? won : e == CU_FILE_MEMORY_ALREADY_REGISTERED ? lost : other)++;
    });
    ASSERT_EQ(won.load(), 1) << "rep " << rep;
    ASSERT_EQ(lost.load(), kThreads - 1);
    ASSERT_EQ(other.load(), 0);
    ASSERT_EQ(cuFileBufDeregister(mem.data() + winner * 1000).err, CU_FILE_SUCCESS);
  }
}

TEST_F(Registration, StagingPoolOfOneBufferServesManyThreads) {
  // O_DIRECT into unaligned memory goes through bounce buffers; with a pool
  // of one 4 KiB buffer every participant of every request waits for it in
  // turn, which must neither deadlock nor mix up bytes.
  if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "O_DIRECT is not supported";
  CloseAll();
  const size_t sizes[] = {4}, counts[] = {1};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(sizes, counts, 1).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  constexpr size_t kRegion = (256 << 10) + 4096;
  constexpr int kThreads = 6;
  const std::vector<uint8_t> data = RandomBytes(kThreads * kRegion, 5);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = ::open(dir_.File("f").c_str(), O_RDWR | O_DIRECT);
  ASSERT_GE(fd, 0);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  std::atomic<int> bad{0};
  OnThreads(kThreads, [&](int t) {
    std::vector<uint8_t> buf(kRegion + 1);  // + 1: read into an odd address
    const off_t off = static_cast<off_t>(t * kRegion);
    if (cuFileRead(fh, buf.data() + 1, kRegion - 4096, off + 4096, 0) != kRegion - 4096) ++bad;
    if (std::memcmp(buf.data() + 1, data.data() + off + 4096, kRegion - 4096) != 0) ++bad;
    if (cuFileWrite(fh, buf.data() + 1, kRegion - 4096, off, 0) != kRegion - 4096) ++bad;
  });
  EXPECT_EQ(bad.load(), 0);
  std::vector<uint8_t> want = data;
  for (int t = 0; t < kThreads; ++t)
    std::memmove(want.data() + t * kRegion, data.data() + t * kRegion + 4096, kRegion - 4096);
  EXPECT_TRUE(ReadWholeFile(dir_.File("f")) == want);
  cuFileHandleDeregister(fh);
  ::close(fd);
}

// Counts the buffered descriptors opened for O_DIRECT handles.
class CountReopens : public SysOps {
 public:
  std::atomic<int> opens{0};
  int Open(const char *path, int flags, mode_t mode) override {
    if (std::strncmp(path, "/proc/self/fd/", 14) == 0) ++opens;
    return SysOps::Open(path, flags, mode);
  }
};

TEST_F(Registration, ThreadsRacingForTheBufferedDescriptorOpenItOnce) {
  if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "O_DIRECT is not supported";
  constexpr int kThreads = 8;
  constexpr size_t kLen = 1000;  // unaligned: the buffered descriptor reads it
  const std::vector<uint8_t> data = RandomBytes(kThreads * 4096, 9);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = ::open(dir_.File("f").c_str(), O_RDONLY | O_DIRECT);
  ASSERT_GE(fd, 0);
  CountReopens count;
  ScopedSysOps scope(&count);
  for (int rep = 0; rep < 20; ++rep) {
    CUfileHandle_t fh = nullptr;
    ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
    const int before = count.opens.load();
    std::atomic<int> bad{0};
    OnThreads(kThreads, [&](int t) {
      std::vector<uint8_t> buf(kLen);
      const off_t off = static_cast<off_t>(t * 4096 + 7);
      if (cuFileRead(fh, buf.data(), kLen, off, 0) != static_cast<ssize_t>(kLen)) ++bad;
      if (std::memcmp(buf.data(), data.data() + off, kLen) != 0) ++bad;
    });
    cuFileHandleDeregister(fh);
    ASSERT_EQ(bad.load(), 0) << "rep " << rep;
    ASSERT_EQ(count.opens.load() - before, 1) << "rep " << rep;
  }
  ::close(fd);
}

TEST_F(Registration, DeregisterRacingIoIsSafe) {
  // I/O on a handle being deregistered finishes or is refused, never crashes.
  constexpr size_t kSize = 2 << 20;
  const std::vector<uint8_t> data = RandomBytes(kSize, 3);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = ::open(dir_.File("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  for (int rep = 0; rep < 20; ++rep) {
    CUfileHandle_t fh = nullptr;
    ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
    std::atomic<int> bad{0};
    OnThreads(4, [&](int t) {
      if (t == 0) {
        cuFileHandleDeregister(fh);
        return;
      }
      std::vector<uint8_t> buf(kSize);
      const ssize_t n = cuFileRead(fh, buf.data(), kSize, 0, 0);
      if (n == static_cast<ssize_t>(kSize)) {
        if (buf != data) ++bad;
      } else if (n != -static_cast<ssize_t>(CU_FILE_HANDLE_NOT_REGISTERED)) {
        ++bad;
      }
    });
    ASSERT_EQ(bad.load(), 0) << "rep " << rep;
  }
  ::close(fd);
}

}  // namespace
}  // namespace ufile::test
