// SPDX-License-Identifier: Apache-2.0
// fault_test's faults on the asynchronous paths. A batch runs one faulty
// entry (2 MiB in 256 KiB chunks) beside three healthy neighbours on another
// file: the faulty entry ends CUFILE_FAILED with -errno in ret (or complete,
// for continued short transfers), the neighbours complete with their exact
// byte counts, and no byte outside a request's range changes (guard bytes in
// every buffer and both files). The same faults on cuFileReadAsync /
// WriteAsync over a fake stream store -1 in *bytes. Every wait is bounded by
// a watchdog, and after each fault the same I/O succeeds (staging buffers
// failing to allocate: staging_fault_test.cpp).
// Each runs on the POSIX engine (AsyncFixture) and on io_uring, whose
// completions carry the faults (support/faulty_sys_ops.h).
#include <cufile.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>

#include "core/driver.h"
#include "core/runtime.h"
#include "cpu/async_fixture.h"
#include "cpu/fake_gpu.h"
#include "support/batch_run.h"
#include "support/faulty_sys_ops.h"
#include "support/file_bytes.h"
#include "support/guarded_buffer.h"
#include "support/watchdog.h"

namespace ufile::test {
namespace {

using Op = FaultySysOps::Op;
using Action = FaultySysOps::Action;
using std::chrono::seconds;

constexpr size_t kChunk = 256 << 10;         // max_direct_io_size: the chunks
constexpr size_t kFile = 9 * kChunk + 4321;  // f: the file the faulty request targets
constexpr size_t kSize = 8 * kChunk;         // the faulty request: 8 chunks
constexpr off_t kOff = 12345;                // unaligned: O_DIRECT gets a head and a tail
constexpr size_t kGuard = 8192;
constexpr size_t kBufOff = kGuard + 57;  // the O_DIRECT middle lands aligned in memory
constexpr size_t kOther = 12 * kChunk;   // g: the neighbours' file, offsets past f's faults
constexpr ssize_t kUnset = 0x7eadbeef;   // *bytes before the stream reaches the operation

off_t InChunk(size_t k) {
  return kOff + static_cast<off_t>(k * kChunk) + 1000;
}

// {O_DIRECT, io_uring engine}.
class AsyncFaults : public AsyncFixture,
                    public ::testing::WithParamInterface<std::tuple<bool, bool>> {
 protected:
  // Direct reads of this hot file would come from the page cache, past the
  // faults: they are tested with O_DIRECT here (page_cache_read_test has theirs).
  ScopedEnv cache_off_{"UFILE_PAGE_CACHE_READS", "0"};
  void SetUp() override {
    AsyncFixture::SetUp();
    direct_ = std::get<0>(GetParam());
    if (direct_ && !DirectIoSupported(dir_.path()))
      GTEST_SKIP() << "no O_DIRECT in " << dir_.path();
    while (cuFileUseCount() > 0) ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 256).err,
              CU_FILE_SUCCESS);
    if (std::get<1>(GetParam())) uring_env_.emplace("UFILE_ENGINE", std::string("io_uring"));
    Reopen(0);
    if (std::get<1>(GetParam()) && EngineName() != "io_uring")
      GTEST_SKIP() << "io_uring is not usable here (the engine fell back to POSIX)";
    fh_ = OpenFile("f", kFile, 1, O_RDWR | (direct_ ? O_DIRECT : 0));
    file_ = RandomBytes(kFile, 1);
    gh_ = OpenFile("g", kOther, 2, O_RDWR);
    other_ = RandomBytes(kOther, 2);
    ASSERT_EQ(cuFileBatchIOSetUp(&batch_, 8).err, CU_FILE_SUCCESS);
    gpu_.Add(stream_);
  }
  void TearDown() override {
    if (batch_) cuFileBatchIODestroy(batch_);
    AsyncFixture::TearDown();
  }

  // The faulty request A beside three healthy neighbours on g (a read, a
  // write, a read short at end of file), all checked here; returns A's event.
  CUfileIOEvents_t BatchWithNeighbours(bool write) {
    mem_.Reset();
    for (GuardedBuffer *b : {&nb_[0], &nb_[1], &nb_[2]}) b->Reset();
    const off_t b_off = 9 * kChunk + 5, c_off = 10 * kChunk + 4099, d_off = kOther - 1000;
    const std::vector<CUfileIOEvents_t> ev =
        RunBatch(batch_, {{write ? CUFILE_WRITE : CUFILE_READ, fh_, &mem_, kSize, kOff, kBufOff},
                          {CUFILE_READ, gh_, &nb_[0], kChunk + 77, b_off, 100},
                          {CUFILE_WRITE, gh_, &nb_[1], 170000, c_off, 3},
                          {CUFILE_READ, gh_, &nb_[2], 5000, d_off, 11}});
    const size_t want[] = {0, kChunk + 77, 170000, 1000};
    for (size_t i = 1; i < 4; ++i) {
      EXPECT_EQ(ev[i].status, CUFILE_COMPLETE) << "neighbour " << i;
      EXPECT_EQ(ev[i].ret, want[i]) << "neighbour " << i;
    }
    EXPECT_TRUE(nb_[0].Holds(100, other_.data() + b_off, kChunk + 77));
    EXPECT_EQ(nb_[0].GuardsChanged(100, kChunk + 77), "");
    EXPECT_TRUE(nb_[1].Unchanged()) << "a write changed its source";
    std::memcpy(other_.data() + c_off, nb_[1].pattern().data() + 3, 170000);
    EXPECT_TRUE(FileBytes(dir_.File("g")) == other_) << "g differs from its model";
    EXPECT_TRUE(nb_[2].Holds(11, other_.data() + d_off, 1000));
    EXPECT_EQ(nb_[2].GuardsChanged(11, 1000), "") << "a short read wrote past its count";
    return ev[0];
  }

  void ExpectFailed(const CUfileIOEvents_t &ev, int err, bool write) {
    EXPECT_EQ(ev.status, CUFILE_FAILED);
    EXPECT_EQ(static_cast<ssize_t>(ev.ret), -err) << "ret " << static_cast<ssize_t>(ev.ret);
    ExpectFailedRange(write);
  }
  // After a failed request: the guards of mem_, and f outside [kOff, + kSize).
  void ExpectFailedRange(bool write) {
    if (write) {
      EXPECT_TRUE(mem_.Unchanged()) << "a write changed its source";
    } else {
      EXPECT_EQ(mem_.GuardsChanged(kBufOff, kSize), "");
    }
    ExpectFileOutsideRange(write);
  }
  void ExpectFileOutsideRange(bool write) {
    const std::vector<uint8_t> now = FileBytes(dir_.File("f"));
    ASSERT_EQ(now.size(), kFile) << "a failed request changed the file size";
    if (!write) {
      EXPECT_TRUE(now == file_) << "a read changed the file";
      return;
    }
    EXPECT_EQ(0, std::memcmp(now.data(), file_.data(), kOff)) << "bytes before the range changed";
    EXPECT_EQ(0, std::memcmp(now.data() + kOff + kSize, file_.data() + kOff + kSize,
                             kFile - kOff - kSize))
        << "bytes after the range changed";
    file_ = now;  // the range itself is unspecified after a failed write
  }
  // A complete request of kSize at kOff: byte-exact, nothing else changed.
  void ExpectDone(ssize_t ret, bool write) {
    ASSERT_EQ(ret, static_cast<ssize_t>(kSize));
    if (write) {
      std::memcpy(file_.data() + kOff, mem_.pattern().data() + kBufOff, kSize);
      EXPECT_TRUE(mem_.Unchanged()) << "a write changed its source";
      EXPECT_TRUE(FileBytes(dir_.File("f")) == file_) << "f differs after the write";
    } else {
      EXPECT_TRUE(mem_.Holds(kBufOff, file_.data() + kOff, kSize)) << "wrong bytes read";
      EXPECT_EQ(mem_.GuardsChanged(kBufOff, kSize), "");
    }
  }
  void ExpectBatchDone(const CUfileIOEvents_t &ev, bool write) {
    EXPECT_EQ(ev.status, CUFILE_COMPLETE);
    ExpectDone(static_cast<ssize_t>(ev.ret), write);
  }
  // The library is still usable: the same requests, no fault, succeed.
  void ExpectHealthy() {
    SCOPED_TRACE("after the fault");
    ExpectBatchDone(BatchWithNeighbours(false), false);
    ExpectBatchDone(BatchWithNeighbours(true), true);
    ExpectDone(StreamIo(false, stream_.handle()), false);
    ExpectDone(StreamIo(true, stream_.handle()), true);
  }

  // kSize at kOff through cuFileRead/WriteAsync on s (NULL: synchronous);
  // waits for the stream (watchdog: 30 s) and returns *bytes.
  ssize_t StreamIo(bool write, CUstream s) {
    mem_.Reset();
    Watchdog dog(seconds(30), write ? "cuFileWriteAsync" : "cuFileReadAsync");
    size_t size = kSize;
    off_t off = kOff, boff = kBufOff;
    ssize_t bytes = kUnset;
    const CUfileError_t e = write
                                ? cuFileWriteAsync(fh_, mem_.data(), &size, &off, &boff, &bytes, s)
                                : cuFileReadAsync(fh_, mem_.data(), &size, &off, &boff, &bytes, s);
    EXPECT_EQ(e.err, CU_FILE_SUCCESS) << "I/O errors reach *bytes, not the call's result";
    if (s) stream_.Sync();
    return bytes;
  }

  static std::string EngineName() {
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    return g.ok() ? g->runtime().engine().name() : "";
  }

  std::optional<ScopedEnv> uring_env_;  // replaces the fixture's thread_pool
  bool direct_ = false;
  CUfileHandle_t fh_ = nullptr, gh_ = nullptr;
  std::vector<uint8_t> file_, other_;  // models of f and g
  GuardedBuffer mem_{kBufOff + kSize + kGuard, 3};
  GuardedBuffer nb_[3] = {{2 * kChunk, 4}, {kChunk, 5}, {kChunk, 6}};
  CUfileBatchHandle_t batch_ = nullptr;
  FakeGpu gpu_;
  FakeStream stream_;  // after gpu_: stopped first
};

TEST_P(AsyncFaults, NoFaultIsByteExact) {
  FaultySysOps ops;
  ScopedSysOps s(&ops);
  ExpectHealthy();
  EXPECT_GE(ops.calls(Op::kPread), 8) << "the request was not split into chunks";
  EXPECT_EQ(ops.fired(), 0);
}

TEST_P(AsyncFaults, BatchEioOnReadAtChunkK) {
  for (size_t k : {size_t{0}, size_t{3}, size_t{7}}) {
    SCOPED_TRACE(::testing::Message() << "chunk " << k);
    FaultySysOps ops;
    ops.Arm({Op::kPread, InChunk(k)});
    ScopedSysOps s(&ops);
    ExpectFailed(BatchWithNeighbours(false), EIO, false);
    EXPECT_EQ(ops.fired(), 1);
  }
  ExpectHealthy();
}

TEST_P(AsyncFaults, BatchEioOnWriteAtChunkK) {
  for (size_t k : {size_t{0}, size_t{5}, size_t{7}}) {
    SCOPED_TRACE(::testing::Message() << "chunk " << k);
    FaultySysOps ops;
    ops.Arm({Op::kPwrite, InChunk(k)});
    ScopedSysOps s(&ops);
    ExpectFailed(BatchWithNeighbours(true), EIO, true);
    EXPECT_EQ(ops.fired(), 1);
  }
  ExpectHealthy();
}

TEST_P(AsyncFaults, BatchShortTransfersAreContinued) {
  for (off_t at : {kOff + 100, InChunk(4), kOff + static_cast<off_t>(kSize) - 10}) {
    SCOPED_TRACE(::testing::Message() << "short transfer at " << at);
    FaultySysOps ops;
    ops.Arm({Op::kPread, at, 0, 1, Action::kShort});
    ops.Arm({Op::kPwrite, at, 0, 1, Action::kShort});
    ScopedSysOps s(&ops);
    ExpectBatchDone(BatchWithNeighbours(false), false);
    ExpectBatchDone(BatchWithNeighbours(true), true);
    EXPECT_EQ(ops.fired(), 2);
  }
}

TEST_P(AsyncFaults, BatchEnospcAndEbadf) {
  {
    FaultySysOps ops;
    ops.Arm({Op::kPwrite, InChunk(6), 0, 1, Action::kErrno, ENOSPC});
    ScopedSysOps s(&ops);
    ExpectFailed(BatchWithNeighbours(true), ENOSPC, true);
  }
  {
    FaultySysOps ops;
    ops.Arm({Op::kPread, InChunk(1), 0, 1, Action::kErrno, EBADF});
    ops.Arm({Op::kPwrite, InChunk(2), 0, 1, Action::kErrno, EBADF});
    ScopedSysOps s(&ops);
    ExpectFailed(BatchWithNeighbours(false), EBADF, false);
    ExpectFailed(BatchWithNeighbours(true), EBADF, true);
    EXPECT_EQ(ops.fired(), 2);
  }
  ExpectHealthy();
}

// Two failing entries of one batch: each gets its own error.
TEST_P(AsyncFaults, BatchEachFailingEntryHasItsOwnError) {
  FaultySysOps ops;
  ops.Arm({Op::kPread, InChunk(1), 0, 1, Action::kErrno, EIO});
  ops.Arm({Op::kPwrite, InChunk(6), 0, 1, Action::kErrno, ENOSPC});
  ScopedSysOps s(&ops);
  GuardedBuffer src(4 * kChunk + 2 * kGuard, 7);
  mem_.Reset();
  const off_t w_off = kOff + static_cast<off_t>(4 * kChunk);
  const std::vector<CUfileIOEvents_t> ev =
      RunBatch(batch_, {{CUFILE_READ, fh_, &mem_, 4 * kChunk, kOff, kBufOff},
                        {CUFILE_WRITE, fh_, &src, 4 * kChunk, w_off, kGuard}});
  EXPECT_EQ(ev[0].status, CUFILE_FAILED);
  EXPECT_EQ(static_cast<ssize_t>(ev[0].ret), -EIO);
  EXPECT_EQ(ev[1].status, CUFILE_FAILED);
  EXPECT_EQ(static_cast<ssize_t>(ev[1].ret), -ENOSPC);
  EXPECT_EQ(mem_.GuardsChanged(kBufOff, 4 * kChunk), "");
  EXPECT_TRUE(src.Unchanged());
  ExpectFileOutsideRange(true);  // f outside [kOff, + kSize) unchanged
  EXPECT_EQ(ops.fired(), 2);
}

TEST_P(AsyncFaults, BatchBufferedReopenFailing) {
  if (!direct_) GTEST_SKIP() << "only O_DIRECT handles reopen a buffered descriptor";
  FaultySysOps ops;
  ops.open_err = EMFILE;
  {
    ScopedSysOps s(&ops);
    ExpectFailed(BatchWithNeighbours(false), EMFILE, false);
    ExpectFailed(BatchWithNeighbours(true), EMFILE, true);
    EXPECT_GE(ops.fired(), 2);
  }
  ExpectHealthy();  // the reopen is retried
}

TEST_P(AsyncFaults, StreamEioOnReadAtChunkK) {
  for (size_t k : {size_t{0}, size_t{3}, size_t{7}}) {
    SCOPED_TRACE(::testing::Message() << "chunk " << k);
    FaultySysOps ops;
    ops.Arm({Op::kPread, InChunk(k)});
    ScopedSysOps s(&ops);
    EXPECT_EQ(StreamIo(false, stream_.handle()), -1);
    ExpectFailedRange(false);
    EXPECT_EQ(ops.fired(), 1);
  }
  ExpectHealthy();
}

TEST_P(AsyncFaults, StreamWriteFaults) {
  for (int err : {EIO, ENOSPC, EBADF}) {
    SCOPED_TRACE(::testing::Message() << "errno " << err);
    FaultySysOps ops;
    ops.Arm({Op::kPwrite, InChunk(5), 0, 1, Action::kErrno, err});
    ScopedSysOps s(&ops);
    EXPECT_EQ(StreamIo(true, stream_.handle()), -1);
    ExpectFailedRange(true);
    EXPECT_EQ(ops.fired(), 1);
  }
  ExpectHealthy();
}

TEST_P(AsyncFaults, StreamEbadfOnRead) {
  FaultySysOps ops;
  ops.Arm({Op::kPread, InChunk(2), 0, 1, Action::kErrno, EBADF});
  ScopedSysOps s(&ops);
  EXPECT_EQ(StreamIo(false, stream_.handle()), -1);
  ExpectFailedRange(false);
}

TEST_P(AsyncFaults, StreamShortTransfersAreContinued) {
  for (off_t at : {kOff + 100, InChunk(4), kOff + static_cast<off_t>(kSize) - 10}) {
    SCOPED_TRACE(::testing::Message() << "short transfer at " << at);
    FaultySysOps ops;
    ops.Arm({Op::kPread, at, 0, 1, Action::kShort});
    ops.Arm({Op::kPwrite, at, 0, 1, Action::kShort});
    ScopedSysOps s(&ops);
    ExpectDone(StreamIo(false, stream_.handle()), false);
    ExpectDone(StreamIo(true, stream_.handle()), true);
    EXPECT_EQ(ops.fired(), 2);
  }
}

// A failed operation does not stop its stream: the next one, enqueued
// behind it before either ran, completes.
TEST_P(AsyncFaults, StreamGoesOnAfterAFailedOperation) {
  FaultySysOps ops;
  ops.Arm({Op::kPread, InChunk(3)});  // once: the first operation's read
  ScopedSysOps s(&ops);
  Watchdog dog(seconds(30), "two stream reads");
  std::atomic<bool> open{false};
  stream_.Gate(&open);
  GuardedBuffer second(kSize, 8);
  size_t size = kSize, size2 = kSize;
  off_t off = kOff, boff = kBufOff, off2 = kOff, boff2 = 0;
  ssize_t bytes = kUnset, bytes2 = kUnset;
  mem_.Reset();
  ASSERT_EQ(cuFileReadAsync(fh_, mem_.data(), &size, &off, &boff, &bytes, stream_.handle()).err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(
      cuFileReadAsync(fh_, second.data(), &size2, &off2, &boff2, &bytes2, stream_.handle()).err,
      CU_FILE_SUCCESS);
  open = true;
  stream_.Sync();
  EXPECT_EQ(bytes, -1);
  ExpectFailedRange(false);
  EXPECT_EQ(bytes2, static_cast<ssize_t>(kSize));
  EXPECT_TRUE(second.Holds(0, file_.data() + kOff, kSize));
}

// The NULL stream runs synchronously: I/O errors are stored, not returned.
TEST_P(AsyncFaults, NullStreamStoresTheError) {
  FaultySysOps ops;
  ops.Arm({Op::kPread, InChunk(7)});
  ops.Arm({Op::kPwrite, InChunk(0), 0, 1, Action::kErrno, ENOSPC});
  ScopedSysOps s(&ops);
  EXPECT_EQ(StreamIo(false, nullptr), -1);
  ExpectFailedRange(false);
  EXPECT_EQ(StreamIo(true, nullptr), -1);
  ExpectFailedRange(true);
  EXPECT_EQ(ops.fired(), 2);
}

INSTANTIATE_TEST_SUITE_P(Fd, AsyncFaults, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto &p) {
                           return std::string(std::get<0>(p.param) ? "Direct" : "Buffered") +
                                  (std::get<1>(p.param) ? "Uring" : "Posix");
                         });

}  // namespace
}  // namespace ufile::test
