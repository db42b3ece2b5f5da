// SPDX-License-Identifier: Apache-2.0
// The stream-ordered protocol on a fake GPU (streams as host threads): the
// I/O waits for earlier stream work, reads unfixed parameters when the
// stream arrives (every registration flag), streams proceed independently,
// many operations reuse flag slots, errors reach *bytes, enqueue failures,
// graph capture, the memops bypass (the descriptor checked after the stream
// wait), and cuFileDriverClose waiting.
#include <cufile.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "async/flag_pool.h"
#include "async/stream_watcher.h"
#include "cpu/async_fixture.h"
#include "cpu/fake_gpu.h"

namespace ufile::test {
namespace {

using std::chrono::milliseconds;

// Holds every pread of the file fd names until opened.
class HoldFd : public SysOps {
 public:
  explicit HoldFd(int fd) : file_(fd) {}
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    if (file_.Names(fd))
      while (!open.load()) std::this_thread::sleep_for(milliseconds(1));
    return SysOps::Pread(fd, buf, len, off);
  }
  std::atomic<bool> open{false};

 private:
  FileId file_;
};

class StreamAsync : public AsyncFixture {
 protected:
  static constexpr size_t kFile = 1 << 22;
  void SetUp() override {
    AsyncFixture::SetUp();
    gpu_.Add(s1_);
    gpu_.Add(s2_);
    fh_ = OpenFile("data", kFile, 42, O_RDWR, &fd_);
    data_ = RandomBytes(kFile, 42);
    buf_.assign(kFile, 0);
  }
  void TearDown() override {
    s1_.Sync();
    s2_.Sync();
    EXPECT_TRUE(Quiet()) << "operations not retired";
    AsyncFixture::TearDown();
  }
  // Every operation retired: the watcher lets go of an operation shortly
  // after its stream has passed it.
  bool Quiet() {
    for (int i = 0; i < 1000; ++i) {
      if (FlagPool::Get().in_use() == 0 && StreamWatcher::Get().watched() == 0) return true;
      std::this_thread::sleep_for(milliseconds(1));
    }
    return false;
  }
  CUfileError_t Read(size_t *size, off_t *off, off_t *boff, ssize_t *bytes, FakeStream &s,
                     CUfileHandle_t fh = nullptr) {
    return cuFileReadAsync(fh ? fh : fh_, buf_.data(), size, off, boff, bytes, s.handle());
  }
  bool Holds(size_t boff, size_t off, size_t n) {
    return memcmp(buf_.data() + boff, data_.data() + off, n) == 0;
  }

  FakeGpu gpu_;
  FakeStream s1_, s2_;
  CUfileHandle_t fh_ = nullptr;
  int fd_ = -1;
  std::vector<uint8_t> data_, buf_;
};

TEST_F(StreamAsync, OperationWaitsForEarlierWorkOnItsStream) {
  std::atomic<bool> open{false};
  s1_.Gate(&open);
  size_t size = 100000;
  off_t off = 777, boff = 5;
  ssize_t bytes = 0;
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(bytes, 0);
  EXPECT_EQ(std::count(buf_.begin(), buf_.end(), 0), static_cast<long>(kFile));
  open = true;
  s1_.Sync();
  EXPECT_EQ(bytes, 100000);
  EXPECT_TRUE(Holds(5, 777, 100000));
}

TEST_F(StreamAsync, EveryRegistrationFlag) {
  for (unsigned flags = 0; flags <= 15; ++flags) {
    SCOPED_TRACE(flags);
    ASSERT_EQ(cuFileStreamRegister(s1_.handle(), flags).err, CU_FILE_SUCCESS);
    std::fill(buf_.begin(), buf_.end(), 0);
    std::atomic<bool> open{false};
    s1_.Gate(&open);
    size_t size = 8192;
    off_t off = 4096, boff = 0;
    ssize_t bytes = 0;
    ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
    size = 16384, off = 4096 * 9, boff = 4096 * 2;  // changed before the stream arrives
    open = true;
    s1_.Sync();
    const size_t want_size = (flags & CU_FILE_STREAM_FIXED_FILE_SIZE) ? 8192 : 16384;
    const size_t want_off = (flags & CU_FILE_STREAM_FIXED_FILE_OFFSET) ? 4096 : 4096 * 9;
    const size_t want_boff = (flags & CU_FILE_STREAM_FIXED_BUF_OFFSET) ? 0 : 4096 * 2;
    EXPECT_EQ(bytes, static_cast<ssize_t>(want_size));
    EXPECT_TRUE(Holds(want_boff, want_off, want_size));
    ASSERT_EQ(cuFileStreamDeregister(s1_.handle()).err, CU_FILE_SUCCESS);
  }
}

// s1's I/O is stuck in the file system; s2's completes meanwhile.
TEST_F(StreamAsync, StreamsProceedIndependently) {
  int other_fd = -1;
  CUfileHandle_t other = OpenFile("other", kFile, 42, O_RDWR, &other_fd);
  HoldFd hold(fd_);
  ScopedSysOps install(&hold);
  size_t size = 65536, size2 = 65536;
  off_t off = 0, boff = 0, off2 = 65536, boff2 = 65536;
  ssize_t bytes = 0, bytes2 = 0;
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
  ASSERT_EQ(Read(&size2, &off2, &boff2, &bytes2, s2_, other).err, CU_FILE_SUCCESS);
  s2_.Sync();
  EXPECT_EQ(bytes2, 65536);
  EXPECT_FALSE(s1_.Idle());
  EXPECT_EQ(bytes, 0);
  hold.open = true;
  s1_.Sync();
  EXPECT_EQ(bytes, 65536);
  EXPECT_TRUE(Holds(0, 0, 2 * 65536));
}

// Holds each pread of the file fd names until preads of it have entered on
// two threads (or 20 s have passed, which the test reports).
class Rendezvous : public SysOps {
 public:
  explicit Rendezvous(int fd) : file_(fd) {}
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    if (file_.Names(fd)) {
      std::unique_lock<std::mutex> lock(mu_);
      threads_.insert(std::this_thread::get_id());
      cv_.notify_all();
      cv_.wait_for(lock, std::chrono::seconds(20), [&] { return threads_.size() >= 2; });
    }
    return SysOps::Pread(fd, buf, len, off);
  }
  size_t threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }

 private:
  FileId file_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::thread::id> threads_;
};

// A large stream operation is split over the I/O pool like a synchronous
// call (it does not run on one thread): its reads meet on two threads.
TEST_F(StreamAsync, LargeOperationSpreadsOverThePool) {
  while (cuFileUseCount() > 0) ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 2).err,
            CU_FILE_SUCCESS);
  Reopen(0);
  int fd = -1;
  CUfileHandle_t fh = OpenFile("big", kFile, 42, O_RDWR, &fd);
  Rendezvous meet(fd);
  ScopedSysOps install(&meet);
  size_t size = kFile;
  off_t off = 0, boff = 0;
  ssize_t bytes = 0;
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_, fh).err, CU_FILE_SUCCESS);
  s1_.Sync();
  EXPECT_EQ(bytes, static_cast<ssize_t>(kFile));
  EXPECT_TRUE(Holds(0, 0, kFile));
  EXPECT_GE(meet.threads(), 2u) << "the operation ran on one thread";
}

TEST_F(StreamAsync, ManyOperationsReuseFlagSlots) {
  constexpr int kOps = 300;
  constexpr size_t kChunk = 8192;
  std::vector<size_t> size(kOps, kChunk);
  std::vector<off_t> off(kOps), boff(kOps);
  std::vector<ssize_t> bytes(kOps, 0);
  std::atomic<bool> open{false};
  s1_.Gate(&open);
  s2_.Gate(&open);
  for (int i = 0; i < kOps; ++i) {
    off[i] = boff[i] = static_cast<off_t>(i * kChunk);
    ASSERT_EQ(Read(&size[i], &off[i], &boff[i], &bytes[i], i % 2 ? s2_ : s1_).err, CU_FILE_SUCCESS);
  }
  EXPECT_EQ(FlagPool::Get().in_use(), size_t{kOps});
  open = true;
  s1_.Sync();
  s2_.Sync();
  for (int i = 0; i < kOps; ++i) ASSERT_EQ(bytes[i], static_cast<ssize_t>(kChunk)) << i;
  EXPECT_TRUE(Holds(0, 0, kOps * kChunk));
}

TEST_F(StreamAsync, ErrorsReachBytes) {
  size_t size = 4096;
  off_t off = 0, boff = 0;
  ssize_t bytes = 0;
  {
    FailFdOps fail(fd_, EIO);
    ScopedSysOps install(&fail);
    ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
    s1_.Sync();
  }
  EXPECT_EQ(bytes, -1);
  ASSERT_EQ(cuFileStreamRegister(s1_.handle(), CU_FILE_STREAM_PAGE_ALIGNED_INPUTS).err,
            CU_FILE_SUCCESS);
  std::atomic<bool> open{false};
  s1_.Gate(&open);
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
  off = 100;  // seen when the stream arrives
  open = true;
  s1_.Sync();
  EXPECT_EQ(bytes, -static_cast<ssize_t>(CU_FILE_INVALID_VALUE));
  EXPECT_EQ(cuFileStreamDeregister(s1_.handle()).err, CU_FILE_SUCCESS);
  off = -1;  // a negative offset read at run time
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
  s1_.Sync();
  EXPECT_EQ(bytes, -static_cast<ssize_t>(CU_FILE_INVALID_VALUE));
}

TEST_F(StreamAsync, WriteAsyncWritesTheBufferAsOfStreamTime) {
  std::atomic<bool> open{false};
  s1_.Gate(&open);
  std::vector<uint8_t> src(65536, 0x11);
  size_t size = src.size();
  off_t off = 4096, boff = 0;
  ssize_t bytes = 0;
  ASSERT_EQ(cuFileWriteAsync(fh_, src.data(), &size, &off, &boff, &bytes, s1_.handle()).err,
            CU_FILE_SUCCESS);
  std::fill(src.begin(), src.end(), 0x22);  // "a kernel earlier in the stream"
  open = true;
  s1_.Sync();
  EXPECT_EQ(bytes, 65536);
  std::vector<uint8_t> file = ReadWholeFile(dir_.File("data"));
  EXPECT_EQ(std::count(file.begin() + 4096, file.begin() + 4096 + 65536, 0x22), 65536);
}

TEST_F(StreamAsync, EnqueueFailuresAreReportedAndCleanedUp) {
  size_t size = 4096;
  off_t off = 0, boff = 0;
  ssize_t bytes = 12345;
  gpu_.fail_write_at = 1;  // the first stream write: nothing enqueued
  CUfileError_t e = Read(&size, &off, &boff, &bytes, s1_);
  EXPECT_EQ(e.err, CU_FILE_CUDA_DRIVER_ERROR);
  EXPECT_EQ(e.cu_err, CUDA_ERROR_NOT_SUPPORTED);
  gpu_.fail_write_at = 0;
  gpu_.fail_wait_at = 1;  // the wait: the reach write is in the stream, no I/O is done
  e = Read(&size, &off, &boff, &bytes, s1_);
  EXPECT_EQ(e.err, CU_FILE_CUDA_DRIVER_ERROR);
  s1_.Sync();
  EXPECT_TRUE(Quiet());
  EXPECT_EQ(bytes, 12345);
  EXPECT_EQ(std::count(buf_.begin(), buf_.end(), 0), static_cast<long>(kFile));
  EXPECT_NE(Log().find("cuStreamWaitValue32 failed"), std::string::npos);
}

TEST_F(StreamAsync, RefusedStreams) {
  size_t size = 4096;
  off_t off = 0, boff = 0;
  ssize_t bytes = 0;
  FakeStream unknown;
  EXPECT_EQ(Read(&size, &off, &boff, &bytes, unknown).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileStreamRegister(unknown.handle(), 0).err, CU_FILE_INVALID_VALUE);
  gpu_.capturing = s1_.handle();
  EXPECT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_INVALID_VALUE);
  gpu_.capturing = nullptr;
  const std::string log = Log();
  EXPECT_NE(log.find("is not a usable stream"), std::string::npos);
  EXPECT_NE(log.find("capturing a CUDA graph"), std::string::npos);
}

TEST_F(StreamAsync, MemopsBypassRunsSynchronouslyInStreamOrder) {
  while (cuFileUseCount() > 0) cuFileDriverClose();
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_STREAM_MEMOPS_BYPASS, true).err, CU_FILE_SUCCESS);
  fh_ = OpenFile("data2", kFile, 42, O_RDWR, &fd_);
  std::atomic<bool> open{false};
  s1_.Gate(&open);
  std::thread opener([&] {
    std::this_thread::sleep_for(milliseconds(50));
    open = true;
  });
  size_t size = 4096;
  off_t off = 8192, boff = 0;
  ssize_t bytes = 0;
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
  EXPECT_TRUE(open.load()) << "ran before the stream's earlier work";
  EXPECT_EQ(bytes, 4096);  // done on return
  EXPECT_TRUE(Holds(0, 8192, 4096));
  EXPECT_GE(gpu_.syncs.load(), 1);
  opener.join();
}

// An operation run at once (here through the memops bypass) waits for the
// stream first; where the handle's fd is checked, that check comes after the
// wait, so what the stream's earlier work did to the fd is refused as
// cuFileRead/Write refuse it. With the handle's own description the same
// operations reach the registered file, at their offsets.
TEST_F(StreamAsync, RunAtOnceChecksTheDescriptorAfterTheStreamWait) {
  while (cuFileUseCount() > 0) cuFileDriverClose();
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_STREAM_MEMOPS_BYPASS, true).err, CU_FILE_SUCCESS);
  for (const bool checked : {true, false}) {
    SCOPED_TRACE(checked ? "fd checked" : "own description");
    const std::string name = checked ? "checked" : "own";
    int fd = -1;
    fh_ = OpenFile(name, kFile, 42, O_RDWR, &fd, checked);
    size_t size = 4096;
    off_t off = 0, boff = 0;
    ssize_t bytes = 0;
    // The stream's earlier work runs once the operation waits for it.
    std::atomic<bool> go{false};
    gpu_.syncs = 0;
    gpu_.on_sync = [&go] { go = true; };
    // A write, while the stream's earlier work sets O_APPEND on the descriptor.
    s1_.Gate(&go);
    s1_.Push([fd] { return fcntl(fd, F_SETFL, O_APPEND) == 0; });
    std::vector<uint8_t> src(size, 0x33);
    CUfileError_t e = cuFileWriteAsync(fh_, src.data(), &size, &off, &boff, &bytes, s1_.handle());
    std::vector<uint8_t> want = data_;
    if (checked) {
      EXPECT_EQ(e.err, CU_FILE_INVALID_FILE_OPEN_FLAG);
      EXPECT_EQ(bytes, -static_cast<ssize_t>(CU_FILE_INVALID_FILE_OPEN_FLAG));
    } else {
      EXPECT_EQ(e.err, CU_FILE_SUCCESS);
      EXPECT_EQ(bytes, 4096);
      std::fill(want.begin(), want.begin() + 4096, 0x33);
    }
    EXPECT_TRUE(ReadWholeFile(dir_.File(name)) == want) << "not at offset 0, or appended";
    ASSERT_EQ(fcntl(fd, F_SETFL, 0), 0);
    // A read, while the stream's earlier work closes the descriptor and its
    // number comes to name another file.
    WriteWholeFile(dir_.File("other"), std::vector<uint8_t>(kFile, 0x44));
    const int other = open(dir_.File("other").c_str(), O_RDONLY);
    ASSERT_GE(other, 0);
    go = false;
    s1_.Gate(&go);
    s1_.Push([fd, other] { return dup2(other, fd) == fd; });
    bytes = 0;
    std::fill(buf_.begin(), buf_.end(), 0);
    e = Read(&size, &off, &boff, &bytes, s1_);
    close(other);
    if (checked) {
      EXPECT_EQ(e.err, CU_FILE_INVALID_FILE_OPEN_FLAG);  // EBADF
      EXPECT_EQ(bytes, -1);
      EXPECT_EQ(std::count(buf_.begin(), buf_.end(), 0), static_cast<long>(kFile)) << "read anyway";
      EXPECT_NE(Log().find("now names another file"), std::string::npos);
    } else {
      EXPECT_EQ(e.err, CU_FILE_SUCCESS);
      EXPECT_EQ(bytes, 4096);
      EXPECT_EQ(std::memcmp(buf_.data(), want.data(), 4096), 0) << "not the registered file";
    }
    EXPECT_EQ(gpu_.syncs.load(), 2);
    gpu_.on_sync = nullptr;
  }
  while (cuFileUseCount() > 0) cuFileDriverClose();
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_STREAM_MEMOPS_BYPASS, false).err, CU_FILE_SUCCESS);
}

TEST_F(StreamAsync, DriverCloseWaitsForEnqueuedOperations) {
  std::atomic<bool> open{false};
  s1_.Gate(&open);
  size_t size = 65536;
  off_t off = 0, boff = 0;
  ssize_t bytes = 0;
  ASSERT_EQ(Read(&size, &off, &boff, &bytes, s1_).err, CU_FILE_SUCCESS);
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    while (cuFileUseCount() > 0) cuFileDriverClose();
    closed = true;
  });
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(closed);
  open = true;
  closer.join();
  s1_.Sync();
  EXPECT_EQ(bytes, 65536);
  EXPECT_TRUE(Holds(0, 0, 65536));
}

}  // namespace
}  // namespace ufile::test
