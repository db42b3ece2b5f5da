// SPDX-License-Identifier: Apache-2.0
// A failed io_uring submission (injected through SysOps::UringSubmit), for
// cuFileRead/cuFileWrite and for batch entries: the I/O fails with the
// submission's errno (-1 and errno; CUFILE_FAILED with -errno in ret, every
// entry reported exactly once), nothing is written, the thread's ring is
// reset, and the next I/O works on a fresh ring. A submission that fails while
// pieces are in flight reaps them first (UringWaitCqe), and their results
// count. Pool threads that cannot set up a ring at all run their batch groups
// with the POSIX loops. (fault_test runs the EIO/EINTR/EAGAIN/short/ENOSPC
// tables through the engine's completions.)
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/driver.h"
#include "core/runtime.h"
#include "cpu/async_fixture.h"
#include "support/faulty_sys_ops.h"

namespace ufile::test {
namespace {

// Fails every io_uring submission with -err while armed; counts ring set-ups.
class FailSubmitOps : public SysOps {
 public:
  explicit FailSubmitOps(int err) : err_(err) {}
  int UringSubmit(io_uring *ring, unsigned wait_nr) override {
    if (armed_.load()) {
      ++failed_;
      return -err_;
    }
    return SysOps::UringSubmit(ring, wait_nr);
  }
  int UringQueueInit(unsigned entries, io_uring *ring, unsigned flags) override {
    ++inits_;
    if (refuse_rings_.load()) return -EMFILE;
    return SysOps::UringQueueInit(entries, ring, flags);
  }
  void Arm(bool on) { armed_ = on; }
  void RefuseRings() { refuse_rings_ = true; }
  int failed() const { return failed_.load(); }
  int inits() const { return inits_.load(); }

 private:
  const int err_;
  std::atomic<bool> armed_{false};
  std::atomic<bool> refuse_rings_{false};
  std::atomic<int> failed_{0};
  std::atomic<int> inits_{0};
};

class UringFault : public AsyncFixture {
 protected:
  void SetUp() override {
    AsyncFixture::SetUp();
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    ASSERT_TRUE(g.ok());
    if (std::string_view(g->runtime().engine().name()) != "io_uring")
      GTEST_SKIP() << "io_uring is not usable here (the engine fell back to POSIX)";
  }
  // Declared after the fixture's own: the driver opens with io_uring.
  ScopedEnv uring_env_{"UFILE_ENGINE", std::string("io_uring")};
  FailSubmitOps ops_{ENOMEM};
};

TEST_F(UringFault, SyncReadAndWriteFailWithTheSubmissionsErrno) {
  constexpr size_t kSize = 64 << 10;
  CUfileHandle_t fh = OpenFile("f", kSize, 7);
  const std::vector<uint8_t> want = RandomBytes(kSize, 7);
  ScopedSysOps install(&ops_);
  std::vector<uint8_t> buf(kSize, 0);
  ops_.Arm(true);
  errno = 0;
  EXPECT_EQ(cuFileRead(fh, buf.data(), kSize, 0, 0), -1);
  EXPECT_EQ(errno, ENOMEM);
  // Writes through io_uring are those of O_DIRECT descriptors (buffered ones
  // go straight to pwrite, engine/uring_engine.cpp).
  std::vector<uint8_t> zeros(kSize, 0xEE);
  if (DirectIoSupported(dir_.path())) {
    CUfileHandle_t direct = OpenFile("d", kSize, 7, O_RDWR | O_DIRECT);
    errno = 0;
    EXPECT_EQ(cuFileWrite(direct, zeros.data(), kSize, 0, 0), -1);
    EXPECT_EQ(errno, ENOMEM);
    EXPECT_GE(ops_.failed(), 2);
    EXPECT_EQ(ReadWholeFile(dir_.File("d")), want) << "written although the submission failed";
  }
  const int failed = ops_.failed();
  EXPECT_EQ(cuFileWrite(fh, zeros.data(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(ops_.failed(), failed) << "a buffered write went through io_uring";
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), zeros);
  ASSERT_EQ(cuFileWrite(fh, want.data(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  const int inits = ops_.inits();
  ops_.Arm(false);
  EXPECT_EQ(cuFileRead(fh, buf.data(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(buf, want);
  EXPECT_GT(ops_.inits(), inits) << "the failed ring was not replaced";
  EXPECT_NE(Log().find("io_uring submission failed"), std::string::npos);
}

// While armed: a ring's completions are hidden from UringPeekCqe (not yet
// posted, as far as the engine can tell) and its second submission fails, so
// the failure finds its first submission's pieces in flight.
class DrainOps : public FaultySysOps {
 public:
  int UringQueueInit(unsigned entries, io_uring *ring, unsigned flags) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      submits_[ring] = 0;
    }
    return FaultySysOps::UringQueueInit(entries, ring, flags);
  }
  int UringSubmit(io_uring *ring, unsigned wait_nr) override {
    if (armed.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (++submits_[ring] >= 2) {
        ++failed;
        return -ENOMEM;
      }
    }
    return FaultySysOps::UringSubmit(ring, wait_nr);
  }
  int UringPeekCqe(io_uring *ring, io_uring_cqe **cqe) override {
    if (armed.load()) return -EAGAIN;
    return FaultySysOps::UringPeekCqe(ring, cqe);
  }
  int UringWaitCqe(io_uring *ring, io_uring_cqe **cqe) override {
    ++waits;
    return FaultySysOps::UringWaitCqe(ring, cqe);
  }
  std::atomic<bool> armed{false};
  std::atomic<int> failed{0}, waits{0};

 private:
  std::mutex mu_;
  std::map<io_uring *, int> submits_;  // guarded by mu_
};

TEST_F(UringFault, AFailedSubmissionReapsThePiecesInFlightAndKeepsTheirResults) {
  constexpr size_t kSize = 4 << 20;  // pieces of 1 MiB: several per engine call
  CUfileHandle_t fh = OpenFile("p", kSize, 9);
  const std::vector<uint8_t> want = RandomBytes(kSize, 9);
  std::vector<uint8_t> buf(kSize, 0);
  DrainOps ops;
  ScopedSysOps install(&ops);
  ops.armed = true;
  // Every piece was taken by a submission that worked: the read is whole.
  EXPECT_EQ(cuFileRead(fh, buf.data(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(buf, want);
  EXPECT_GE(ops.failed.load(), 1);
  EXPECT_GE(ops.waits.load(), 2) << "the pieces in flight were not reaped through UringWaitCqe";
  // A drained piece's completion carries its error.
  ops.Arm({FaultySysOps::Op::kPread, 3 << 20, 0, 1, FaultySysOps::Action::kErrno, EIO});
  errno = 0;
  EXPECT_EQ(cuFileRead(fh, buf.data(), kSize, 0, 0), -1);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(ops.fired(), 1);
  EXPECT_NE(Log().find("io_uring submission failed"), std::string::npos);
}

class UringBatchFault : public UringFault {
 protected:
  static constexpr unsigned kN = 16;
  static constexpr size_t kBlock = 4096;
  void SetUp() override {
    UringFault::SetUp();
    if (IsSkipped()) return;
    fh_ = OpenFile("b", kN * kBlock, 11);
    want_ = RandomBytes(kN * kBlock, 11);
    buf_.assign(kN * kBlock, 0);
    ASSERT_EQ(cuFileBatchIOSetUp(&batch_, kN).err, CU_FILE_SUCCESS);
    p_.resize(kN);
    for (unsigned i = 0; i < kN; ++i) {
      p_[i].mode = CUFILE_BATCH;
      p_[i].opcode = CUFILE_READ;
      p_[i].fh = fh_;
      p_[i].u.batch.devPtr_base = buf_.data();
      p_[i].u.batch.devPtr_offset = static_cast<off_t>(i * kBlock);
      p_[i].u.batch.file_offset = static_cast<off_t>(i * kBlock);
      p_[i].u.batch.size = kBlock;
      p_[i].cookie = reinterpret_cast<void *>(uintptr_t{i} + 1);
    }
  }
  void TearDown() override {
    if (batch_) cuFileBatchIODestroy(batch_);
    UringFault::TearDown();
  }
  // Submits the kN reads and collects every event (each cookie once).
  std::map<uintptr_t, CUfileIOEvents_t> Run() {
    std::map<uintptr_t, CUfileIOEvents_t> got;
    EXPECT_EQ(cuFileBatchIOSubmit(batch_, kN, p_.data(), 0).err, CU_FILE_SUCCESS);
    std::vector<CUfileIOEvents_t> ev(kN);
    while (got.size() < kN) {
      unsigned nr = kN;
      timespec timeout{30, 0};
      EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 1, &nr, ev.data(), &timeout).err, CU_FILE_SUCCESS);
      if (nr == 0) break;  // reported below as missing events
      for (unsigned i = 0; i < nr; ++i)
        EXPECT_TRUE(got.emplace(reinterpret_cast<uintptr_t>(ev[i].cookie), ev[i]).second)
            << "cookie reported twice";
    }
    EXPECT_EQ(got.size(), size_t{kN});
    return got;
  }
  void ExpectComplete(const std::map<uintptr_t, CUfileIOEvents_t> &got) {
    for (auto &[cookie, ev] : got) {
      EXPECT_EQ(ev.status, CUFILE_COMPLETE) << cookie;
      EXPECT_EQ(ev.ret, kBlock) << cookie;
    }
    EXPECT_EQ(buf_, want_);
  }
  CUfileHandle_t fh_ = nullptr;
  std::vector<uint8_t> want_, buf_;
  CUfileBatchHandle_t batch_ = nullptr;
  std::vector<CUfileIOParams_t> p_;
};

TEST_F(UringBatchFault, EntriesFailOnceEachAndTheNextBatchWorks) {
  ScopedSysOps install(&ops_);
  ops_.Arm(true);
  for (auto &[cookie, ev] : Run()) {
    EXPECT_EQ(ev.status, CUFILE_FAILED) << cookie;
    EXPECT_EQ(static_cast<int64_t>(ev.ret), -ENOMEM) << cookie;
  }
  EXPECT_GE(ops_.failed(), 1);
  ops_.Arm(false);
  ExpectComplete(Run());
}

// Pool threads whose ring cannot be set up move a group's entries with the
// POSIX loops: same events, same bytes.
TEST_F(UringBatchFault, ThreadsWithoutARingRunTheirGroupsWithPosix) {
  ScopedSysOps install(&ops_);
  ops_.RefuseRings();
  ExpectComplete(Run());
  EXPECT_GT(ops_.inits(), 0) << "no thread tried to set up a ring";
}

}  // namespace
}  // namespace ufile::test
