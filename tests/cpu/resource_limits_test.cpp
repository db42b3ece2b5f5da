// SPDX-License-Identifier: Apache-2.0
// Resource limits. Limits are per process, so two tests run in children
// (death tests re-executing this binary):
//  - RLIMIT_MEMLOCK of 64 KiB, with CAP_IPC_LOCK dropped so that it binds
//    for root too (checked: mlock of 1 MiB fails). Driver open, buffer
//    registration, 16 MiB O_DIRECT reads and writes whose middles go through
//    staging (bounce) buffers, and a batch all work, byte-exact. On the CPU
//    path ufile locks no memory: staging buffers are plain memory (pinning
//    exists only with a GPU: cuMemHostAlloc, falling back to plain memory,
//    logged) and io_uring rings are charged to the memory cgroup (Linux
//    5.12+), so nothing has to shrink.
//  - No file descriptor left (RLIMIT_NOFILE lowered, the rest filled): what
//    needs a new descriptor, the buffered reopen for the unaligned edges of
//    O_DIRECT requests, fails with EMFILE (sync -1/errno, batch ret -EMFILE,
//    stream *bytes -1), touching nothing outside the request; what needs
//    none (registration, aligned O_DIRECT, buffered handles) works; once
//    descriptors are free again the same requests succeed. A driver opened
//    with no descriptor left works too.
// In this process: threads whose io_uring ring cannot be set up (EMFILE,
// injected through SysOps) fall back to pread/pwrite; thousands of handles (64 files, half the
// descriptors O_DIRECT, each handle's buffered reopen used) and thousands of registered buffers,
// each used, all deregistered, and the number of open descriptors back where it was at every step,
// on both engines.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/driver.h"
#include "core/runtime.h"
#include "engine/engine.h"
#include "support/batch_run.h"
#include "support/child_checks.h"
#include "support/file_bytes.h"
#include "support/guarded_buffer.h"
#include "support/test_util.h"
#include "support/watchdog.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

constexpr size_t kMiB = 1 << 20;

// Removes cap from this process's effective and permitted sets.
bool DropCapability(int cap) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  data[cap / 32].effective &= ~(1u << (cap % 32));
  data[cap / 32].permitted &= ~(1u << (cap % 32));
  return syscall(SYS_capset, &hdr, data) == 0;
}

CUfileHandle_t Register(int fd) {
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  return cuFileHandleRegister(&fh, &d).err == CU_FILE_SUCCESS ? fh : nullptr;
}

bool DirectIoHere() {
  TempDir probe;  // destroyed before any child exits: no leftover directory
  return DirectIoSupported(probe.path());
}

// Fills every free descriptor (after lowering the soft limit to a few above
// what is open); Free() closes them again.
class FdFiller {
 public:
  void Fill() {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_cur, OpenFdCount() + 32);
    setrlimit(RLIMIT_NOFILE, &rl);
    for (int fd; (fd = ::dup(0)) >= 0;) fds_.push_back(fd);
    err_ = errno;
  }
  void Free() {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
  }
  size_t count() const { return fds_.size(); }
  int err() const { return err_; }

 private:
  std::vector<int> fds_;
  int err_ = 0;
};

void TinyMemlock(ChildChecks &child) {
  TempDir dir;
  ScopedEnv log("CUFILE_LOGFILE_PATH", dir.File("cufile.log"));
  CHILD_CHECK(DropCapability(CAP_IPC_LOCK));
  const rlimit rl{64 << 10, 64 << 10};
  CHILD_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
  void *probe = std::aligned_alloc(4096, kMiB);
  // The limit binds (the raw syscall: ASan's mlock does nothing).
  CHILD_CHECK(syscall(SYS_mlock, probe, kMiB) != 0);
  std::free(probe);
  const size_t kSize = 16 * kMiB, kFile = kSize + kMiB, kBoff = 4096 + 1;
  const off_t kOff = 777;
  std::vector<uint8_t> model = RandomBytes(kFile, 1);
  WriteWholeFile(dir.File("f"), model);
  const int fd =
      ::open(dir.File("f").c_str(), O_RDWR | (DirectIoSupported(dir.path()) ? O_DIRECT : 0));
  CHILD_CHECK(fd >= 0);
  CHILD_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileHandle_t fh = Register(fd);
  CHILD_CHECK(fh != nullptr);
  GuardedBuffer mem(kBoff + kSize + 4096, 2);
  CHILD_EQ(cuFileBufRegister(mem.data(), mem.size(), 0).err, CU_FILE_SUCCESS);
  // The middle is unaligned in memory: every O_DIRECT chunk bounces.
  CHILD_EQ(cuFileWrite(fh, mem.data(), kSize, kOff, kBoff), kSize);
  std::memcpy(model.data() + kOff, mem.pattern().data() + kBoff, kSize);
  CHILD_CHECK(FileBytes(dir.File("f")) == model);
  std::memset(mem.data(), 0, mem.size());
  CHILD_EQ(cuFileRead(fh, mem.data(), kSize, kOff, kBoff), kSize);
  CHILD_CHECK(mem.Holds(kBoff, model.data() + kOff, kSize));
  CUfileBatchHandle_t batch = nullptr;
  CHILD_EQ(cuFileBatchIOSetUp(&batch, 4).err, CU_FILE_SUCCESS);
  GuardedBuffer out(4 * kMiB + 8, 3);
  std::vector<BatchIo> ios;
  for (size_t i = 0; i < 4; ++i)
    ios.push_back({CUFILE_READ, fh, &out, kMiB, off_t(i * 3 * kMiB + 5), i * kMiB + 1});
  const std::vector<CUfileIOEvents_t> ev = RunBatch(batch, ios);
  for (size_t i = 0; i < 4; ++i) {
    CHILD_EQ(ev[i].status, CUFILE_COMPLETE);
    CHILD_EQ(ev[i].ret, kMiB);
    CHILD_CHECK(out.Holds(i * kMiB + 1, model.data() + i * 3 * kMiB + 5, kMiB));
  }
  cuFileBatchIODestroy(batch);
  CHILD_EQ(cuFileBufDeregister(mem.data()).err, CU_FILE_SUCCESS);
  cuFileHandleDeregister(fh);
  CHILD_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  ::close(fd);
}

TEST(ResourceLimits, TinyMemlockLimit) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  CloseAll();  // the child re-executes the binary: nothing is inherited but limits
  EXPECT_EXIT(RunChild(TinyMemlock), ::testing::ExitedWithCode(0), "");
}

// The file's bytes, through a descriptor opened while some were free.
std::vector<uint8_t> ReadFd(int fd, size_t n) {
  std::vector<uint8_t> out(n);
  const ssize_t r = ::pread(fd, out.data(), n, 0);
  out.resize(r < 0 ? 0 : static_cast<size_t>(r));
  return out;
}

// The O_DIRECT fault file: unaligned requests need the buffered reopen.
constexpr size_t kFile = 6 * kMiB + 99, kSize = 4 * kMiB, kBufOff = 8192 + 57;
constexpr off_t kOff = 12345;

void NoDescriptorLeft(ChildChecks &child) {
  TempDir dir;
  ScopedEnv log("CUFILE_LOGFILE_PATH", dir.File("cufile.log"));
  std::vector<uint8_t> f = RandomBytes(kFile, 1), g = RandomBytes(kFile, 2);
  WriteWholeFile(dir.File("f"), f);
  WriteWholeFile(dir.File("g"), g);
  const int fd = ::open(dir.File("f").c_str(), O_RDWR | O_DIRECT);
  const int gfd = ::open(dir.File("g").c_str(), O_RDWR);
  const int later = ::open(dir.File("g").c_str(), O_RDONLY);  // registered with none left
  const int check = ::open(dir.File("f").c_str(), O_RDONLY);  // reads f with none left
  CHILD_CHECK(fd >= 0 && gfd >= 0 && later >= 0 && check >= 0);
  GuardedBuffer mem(kBufOff + kSize + 8192, 3), small(2 * kMiB, 4);
  // Each path once, on both engines, with descriptors free: UBSan's first
  // check of a dynamic type opens a pipe, which it could not do later.
  for (bool uring : {false, true}) {
    CHILD_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, uring).err, CU_FILE_SUCCESS);
    CHILD_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    CUfileHandle_t h = Register(gfd);
    CUfileBatchHandle_t b = nullptr;
    CHILD_EQ(cuFileBatchIOSetUp(&b, 1).err, CU_FILE_SUCCESS);
    CHILD_EQ(cuFileRead(h, mem.data(), kSize, 0, 0), kSize);  // split over the I/O threads
    CHILD_EQ(RunBatch(b, {{CUFILE_READ, h, &small, 4096, 3, 0}})[0].ret, 4096);
    size_t n = 4096;
    off_t o = 0, bo = 0;
    ssize_t bytes = 0;
    CHILD_EQ(cuFileReadAsync(h, small.data(), &n, &o, &bo, &bytes, nullptr).err, CU_FILE_SUCCESS);
    cuFileBatchIODestroy(b);
    cuFileHandleDeregister(h);
    CHILD_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  }
  CHILD_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileHandle_t fh = Register(fd), gh = Register(gfd);
  CHILD_CHECK(fh && gh);
  CUfileBatchHandle_t batch = nullptr;
  CHILD_EQ(cuFileBatchIOSetUp(&batch, 2).err, CU_FILE_SUCCESS);
  FdFiller filler;
  filler.Fill();
  CHILD_CHECK(filler.count() > 0);
  CHILD_EQ(filler.err(), EMFILE);

  mem.Reset();
  errno = 0;
  CHILD_EQ(cuFileRead(fh, mem.data(), kSize, kOff, kBufOff), -1);
  CHILD_EQ(errno, EMFILE);
  CHILD_CHECK(mem.GuardsChanged(kBufOff, kSize).empty());
  mem.Reset();
  errno = 0;
  CHILD_EQ(cuFileWrite(fh, mem.data(), kSize, kOff, kBufOff), -1);
  CHILD_EQ(errno, EMFILE);
  CHILD_CHECK(mem.Unchanged());
  const std::vector<uint8_t> now = ReadFd(check, kFile + 1);
  CHILD_CHECK(
      now.size() == kFile && std::memcmp(now.data(), f.data(), kOff) == 0 &&
      std::memcmp(now.data() + kOff + kSize, f.data() + kOff + kSize, kFile - kOff - kSize) == 0);
  f = now;  // the range itself is unspecified after a failed write
  // What needs no new descriptor works: aligned O_DIRECT, buffered handles,
  // registering an open descriptor.
  CHILD_EQ(cuFileRead(fh, small.data(), kMiB, 8192, 0), kMiB);
  CHILD_CHECK(small.Holds(0, f.data() + 8192, kMiB));
  CHILD_EQ(cuFileWrite(gh, mem.data(), 1000, 77, 5), 1000);
  std::memcpy(g.data() + 77, mem.data() + 5, 1000);
  CUfileHandle_t lh = Register(later);
  CHILD_CHECK(lh != nullptr);
  CHILD_EQ(cuFileRead(lh, small.data(), 5000, 50, 3), 5000);
  CHILD_CHECK(small.Holds(3, g.data() + 50, 5000));
  // Batch and stream paths report the same error.
  const std::vector<CUfileIOEvents_t> ev = RunBatch(
      batch,
      {{CUFILE_READ, fh, &mem, kSize, kOff, kBufOff}, {CUFILE_READ, gh, &small, 4096, 3, 0}});
  CHILD_EQ(ev[0].status, CUFILE_FAILED);
  CHILD_EQ(static_cast<ssize_t>(ev[0].ret), -EMFILE);
  CHILD_EQ(ev[1].status, CUFILE_COMPLETE);
  CHILD_EQ(ev[1].ret, 4096);
  size_t size = kSize;
  off_t off = kOff, boff = kBufOff;
  ssize_t bytes = 0;
  mem.Reset();
  CHILD_EQ(cuFileReadAsync(fh, mem.data(), &size, &off, &boff, &bytes, nullptr).err,
           CU_FILE_SUCCESS);
  CHILD_EQ(bytes, -1);
  CHILD_CHECK(mem.GuardsChanged(kBufOff, kSize).empty());

  // Descriptors free again: the reopen is retried.
  filler.Free();
  mem.Reset();
  CHILD_EQ(cuFileRead(fh, mem.data(), kSize, kOff, kBufOff), kSize);
  CHILD_CHECK(mem.Holds(kBufOff, f.data() + kOff, kSize));
  CHILD_EQ(cuFileWrite(fh, mem.data(), kSize, kOff + 1, kBufOff), kSize);
  std::memcpy(f.data() + kOff + 1, mem.data() + kBufOff, kSize);
  CHILD_CHECK(FileBytes(dir.File("f")) == f);
  CHILD_CHECK(FileBytes(dir.File("g")) == g);
  cuFileBatchIODestroy(batch);
  for (CUfileHandle_t h : {fh, gh, lh}) cuFileHandleDeregister(h);
  CHILD_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);

  // A session opened with no descriptor left.
  filler.Fill();
  CHILD_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  fh = Register(fd);
  CHILD_CHECK(fh != nullptr);
  CHILD_EQ(cuFileRead(fh, small.data(), kMiB, 4096, 0), kMiB);
  CHILD_CHECK(small.Holds(0, f.data() + 4096, kMiB));
  filler.Free();
  mem.Reset();
  CHILD_EQ(cuFileRead(fh, mem.data(), kSize, kOff, kBufOff), kSize);
  CHILD_CHECK(mem.Holds(kBufOff, f.data() + kOff, kSize));
  cuFileHandleDeregister(fh);
  CHILD_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  for (int d : {fd, gfd, later, check}) ::close(d);
}

TEST(ResourceLimits, NoFileDescriptorLeft) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  if (!DirectIoHere()) GTEST_SKIP() << "no O_DIRECT: nothing reopens a descriptor";
  CloseAll();
  EXPECT_EXIT(RunChild(NoDescriptorLeft), ::testing::ExitedWithCode(0), "");
}

// Refuses every io_uring ring set up after it is installed, as EMFILE does
// (a ring is a descriptor).
class NoNewRings : public SysOps {
 public:
  int UringQueueInit(unsigned, struct io_uring *, unsigned) override {
    ++refused;
    return -EMFILE;
  }
  std::atomic<int> refused{0};
};

// Threads whose ring cannot be set up (after the engine chose io_uring)
// move their bytes with pread/pwrite: the same result.
TEST(ResourceLimits, ThreadsWithoutARingFallBackToPosix) {
  CloseAll();
  TempDir dir;
  ScopedEnv log("CUFILE_LOGFILE_PATH", dir.File("cufile.log"));
  constexpr size_t kLen = 4 * kMiB;
  const std::vector<uint8_t> data = RandomBytes(kLen, 7);
  WriteWholeFile(dir.File("f"), data);
  const int fd = ::open(dir.File("f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, true).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  bool uring = false;
  {
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    ASSERT_TRUE(g.ok());
    uring = std::string_view(g->runtime().engine().name()) == "io_uring";
  }
  CUfileHandle_t fh = Register(fd);
  ASSERT_NE(fh, nullptr);
  NoNewRings rings;
  {
    ScopedSysOps install(&rings);
    Watchdog dog(std::chrono::seconds(60), "I/O on threads without a ring");
    std::vector<uint8_t> buf(kLen + 10, 0);
    ssize_t r = 0, w = 0;
    std::thread([&] {  // a fresh thread: no ring yet; the request spreads over the pool
      r = cuFileRead(fh, buf.data(), kLen, 0, 10);
      w = cuFileWrite(fh, buf.data(), kLen, 0, 10);
    })
        .join();
    EXPECT_EQ(r, static_cast<ssize_t>(kLen));
    EXPECT_EQ(w, static_cast<ssize_t>(kLen));
    EXPECT_EQ(0, std::memcmp(buf.data() + 10, data.data(), kLen));
  }
  if (uring) {
    EXPECT_GE(rings.refused.load(), 1) << "no thread tried to set up a ring";
  }
  EXPECT_TRUE(FileBytes(dir.File("f")) == data);
  cuFileHandleDeregister(fh);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  ::close(fd);
}

// Thousands of handles and buffers in this process, on either engine.
class ManyHandles : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    CloseAll();
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 1 << 16);
    setrlimit(RLIMIT_NOFILE, &rl);
    direct_ = DirectIoSupported(dir_.path());
    // A first session. What it leaves open belongs to the baseline: the
    // calling thread's io_uring ring (it lives as long as the thread) and
    // the log file (opened by the first line logged, here a refusal).
    WriteWholeFile(dir_.File("warm"), RandomBytes(8192, 9));
    const int fd = ::open(dir_.File("warm").c_str(), O_RDWR);
    Open();
    CUfileHandle_t fh = Register(fd);
    char b[100];
    ASSERT_EQ(cuFileRead(fh, b, 100, 0, 0), 100);
    ASSERT_EQ(cuFileBufDeregister(b).err, CU_FILE_MEMORY_NOT_REGISTERED);
    cuFileHandleDeregister(fh);
    ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    ::close(fd);
    baseline_ = OpenFdCount();
    n_ = std::min<size_t>(4096, (rl.rlim_cur - baseline_ - 64) / 3);
    if (n_ < 1024) GTEST_SKIP() << "RLIMIT_NOFILE " << rl.rlim_cur << " is too low";
  }
  void TearDown() override { CloseAll(); }
  // Staged parameters apply to the next open only: set the engine each time.
  void Open() {
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, GetParam()).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  }

  TempDir dir_;
  ScopedEnv log_{"CUFILE_LOGFILE_PATH", dir_.File("cufile.log")};
  bool direct_ = false;
  size_t baseline_ = 0, n_ = 0;
};

TEST_P(ManyHandles, AllUsableAllReleased) {
  constexpr size_t kFiles = 64, kSlot = 8192, kLen = 100;
  const size_t per = n_ / kFiles, n = per * kFiles;
  Open();
  std::vector<std::vector<uint8_t>> model(kFiles);
  for (size_t i = 0; i < kFiles; ++i) {
    model[i] = RandomBytes(per * kSlot + 4096, i);
    WriteWholeFile(dir_.File(std::to_string(i)), model[i]);
  }
  std::vector<int> fds(n);
  std::vector<CUfileHandle_t> fhs(n);
  size_t direct = 0;
  for (size_t k = 0; k < n; ++k) {
    const bool d = direct_ && k % 2;
    fds[k] = ::open(dir_.File(std::to_string(k / per)).c_str(), O_RDWR | (d ? O_DIRECT : 0));
    ASSERT_GE(fds[k], 0) << k;
    fhs[k] = Register(fds[k]);
    ASSERT_NE(fhs[k], nullptr) << k;
    direct += d;
  }
  EXPECT_EQ(OpenFdCount(), baseline_ + 2 * n) << "registration opens one description a handle";
  // Each handle writes its own unaligned slot (an O_DIRECT handle through its
  // buffered reopen) and reads it back.
  for (size_t k = 0; k < n; ++k) {
    const std::vector<uint8_t> src = RandomBytes(kLen, 1000 + k);
    const off_t off = static_cast<off_t>((k % per) * kSlot + 13);
    ASSERT_EQ(cuFileWrite(fhs[k], src.data(), kLen, off, 0), static_cast<ssize_t>(kLen)) << k;
    std::memcpy(model[k / per].data() + off, src.data(), kLen);
    uint8_t back[kLen];
    ASSERT_EQ(cuFileRead(fhs[k], back, kLen, off, 0), static_cast<ssize_t>(kLen)) << k;
    ASSERT_EQ(0, std::memcmp(back, src.data(), kLen)) << k;
  }
  const size_t after_io = OpenFdCount();
  EXPECT_GE(after_io, baseline_ + 2 * n + direct) << "O_DIRECT handles did not reopen";
  if (!GetParam()) {  // io_uring: plus the I/O threads' rings
    EXPECT_EQ(after_io, baseline_ + 2 * n + direct);
  }
  // As many registered buffers, adjacent, each read into through its handle.
  GuardedBuffer mem(n * kSlot, 5);
  for (size_t k = 0; k < n; ++k)
    ASSERT_EQ(cuFileBufRegister(mem.data() + k * kSlot, kSlot, 0).err, CU_FILE_SUCCESS) << k;
  for (size_t k = 0; k < n; ++k) {
    const off_t off = static_cast<off_t>((k % per) * kSlot + 13);
    ASSERT_EQ(cuFileRead(fhs[k], mem.data() + k * kSlot, kLen, off, 4050), ssize_t{kLen}) << k;
    ASSERT_TRUE(mem.Holds(k * kSlot + 4050, model[k / per].data() + off, kLen)) << k;
  }
  EXPECT_EQ(cuFileRead(fhs[0], mem.data(), kLen, 0, kSlot - 10),
            -static_cast<ssize_t>(CU_FILE_INVALID_MAPPING_RANGE))
      << "the registered bound";
  for (int round = 0; round < 2; ++round) {  // all gone: they register again
    for (size_t k = 0; k < n; ++k)
      ASSERT_EQ(cuFileBufDeregister(mem.data() + k * kSlot).err, CU_FILE_SUCCESS) << k;
    EXPECT_EQ(cuFileBufDeregister(mem.data()).err, CU_FILE_MEMORY_NOT_REGISTERED);
    for (size_t k = 0; round == 0 && k < n; ++k)
      ASSERT_EQ(cuFileBufRegister(mem.data() + k * kSlot, kSlot, 0).err, CU_FILE_SUCCESS) << k;
  }
  for (CUfileHandle_t fh : fhs) cuFileHandleDeregister(fh);
  EXPECT_EQ(OpenFdCount(), after_io - direct - n)
      << "deregistration left reopened descriptors open";
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(OpenFdCount(), after_io - direct - 2 * n);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  EXPECT_EQ(OpenFdCount(), baseline_) << "the session left descriptors open";
  for (size_t i = 0; i < kFiles; ++i)
    ASSERT_TRUE(FileBytes(dir_.File(std::to_string(i))) == model[i]) << "file " << i;
  std::printf(
      "%zu handles (each with its own description, %zu O_DIRECT with a buffered one too), %zu "
      "registered buffers: all used, all released, %zu descriptors open before and after\n",
      n, direct, n, baseline_);
}

INSTANTIATE_TEST_SUITE_P(Engine, ManyHandles, ::testing::Values(false, true),
                         [](const auto &p) { return p.param ? "IoUring" : "Posix"; });

}  // namespace
}  // namespace ufile::test
