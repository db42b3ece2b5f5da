// SPDX-License-Identifier: Apache-2.0
// cuFileBatchIO* when things go wrong or are still running: errors per entry
// (CUFILE_FAILED, the error in ret), cancel and destroy with entries in
// flight (nothing written after they return), cuFileDriverClose waiting for
// a batch, batches of a closed session, several threads driving batches.
#include <cufile.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <thread>

#include "cpu/async_fixture.h"

namespace ufile::test {
namespace {

using std::chrono::milliseconds;

CUfileIOParams_t Entry(CUfileOpcode_t op, CUfileHandle_t fh, void *buf, size_t size, off_t file_off,
                       uintptr_t cookie) {
  CUfileIOParams_t p{};
  p.mode = CUFILE_BATCH;
  p.opcode = op;
  p.fh = fh;
  p.u.batch.devPtr_base = buf;
  p.u.batch.size = size;
  p.u.batch.file_offset = file_off;
  p.cookie = reinterpret_cast<void *>(cookie);
  return p;
}

int64_t Signed(size_t ret) {
  return static_cast<int64_t>(ret);
}

class BatchInFlight : public AsyncFixture {
 protected:
  void TearDown() override {
    if (batch_) cuFileBatchIODestroy(batch_);
    AsyncFixture::TearDown();
  }
  std::map<uintptr_t, CUfileIOEvents_t> Collect(size_t n) {
    std::map<uintptr_t, CUfileIOEvents_t> got;
    std::vector<CUfileIOEvents_t> ev(n);
    unsigned nr = static_cast<unsigned>(n);
    EXPECT_EQ(cuFileBatchIOGetStatus(batch_, nr, &nr, ev.data(), nullptr).err, CU_FILE_SUCCESS);
    for (unsigned i = 0; i < nr; ++i)
      EXPECT_TRUE(got.emplace(reinterpret_cast<uintptr_t>(ev[i].cookie), ev[i]).second);
    return got;
  }
  // Submits kEntries 4 KiB writes of pattern to distinct blocks of a zero
  // file while gate holds every pwrite; returns once both I/O threads hold one.
  CUfileHandle_t SubmitHeldWrites(GateOps &gate) {
    CUfileHandle_t fh = OpenFile("held", 0, 0);
    pattern_.assign(kEntries * 4096, 0x5A);
    EXPECT_EQ(cuFileBatchIOSetUp(&batch_, kEntries).err, CU_FILE_SUCCESS);
    std::vector<CUfileIOParams_t> p;
    for (int i = 0; i < kEntries; ++i)
      p.push_back(Entry(CUFILE_WRITE, fh, pattern_.data() + i * 4096, 4096, i * 4096, i));
    EXPECT_EQ(cuFileBatchIOSubmit(batch_, kEntries, p.data(), 0).err, CU_FILE_SUCCESS);
    EXPECT_TRUE(gate.WaitEntered(2));  // 2 I/O threads: two entries run, the rest wait
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_EQ(gate.entered(), 2);
    return fh;
  }
  // Blocks of the held file that hold the pattern.
  int WrittenBlocks() {
    std::vector<uint8_t> f = ReadWholeFile(dir_.File("held"));
    int n = 0;
    for (size_t off = 0; off + 4096 <= f.size(); off += 4096) n += f[off] == 0x5A;
    return n;
  }
  static constexpr int kEntries = 8;
  std::vector<uint8_t> pattern_;
  CUfileBatchHandle_t batch_ = nullptr;
};

TEST_F(BatchInFlight, ErrorsArePerEntry) {
  int eio_fd = -1;
  CUfileHandle_t good = OpenFile("good", 8192, 1);
  CUfileHandle_t ro = OpenFile("ro", 8192, 2, O_RDONLY);
  CUfileHandle_t eio = OpenFile("eio", 8192, 3, O_RDWR, &eio_fd);
  CUfileHandle_t gone = OpenFile("gone", 8192, 4);
  cuFileHandleDeregister(gone);
  handles_.pop_back();
  FailFdOps fail(eio_fd, EIO);
  ScopedSysOps install(&fail);
  std::vector<char> buf(8192);
  std::vector<CUfileIOParams_t> p = {
      Entry(CUFILE_READ, good, buf.data(), 4096, 0, 1),
      Entry(CUFILE_READ, gone, buf.data(), 4096, 0, 2),
      Entry(CUFILE_READ, good, nullptr, 4096, 0, 3),
      Entry(CUFILE_READ, good, buf.data(), 4096, -1, 4),
      Entry(CUFILE_WRITE, ro, buf.data(), 4096, 0, 5),
      Entry(CUFILE_READ, eio, buf.data(), 4096, 0, 6),
      Entry(CUFILE_READ, good, buf.data(), 4096, 0, 7),
      Entry(CUFILE_READ, good, buf.data(), 4096, 0, 8),
      Entry(CUFILE_WRITE, good, buf.data(), 0, 0, 9),
  };
  const int bad_opcode = 7, bad_mode = 0;
  std::memcpy(&p[6].opcode, &bad_opcode, sizeof bad_opcode);
  std::memcpy(&p[7].mode, &bad_mode, sizeof bad_mode);
  ASSERT_EQ(cuFileBatchIOSetUp(&batch_, 16).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, p.size(), p.data(), 0).err, CU_FILE_SUCCESS);
  auto got = Collect(p.size());
  ASSERT_EQ(got.size(), p.size());
  const std::map<uintptr_t, int64_t> want_ret = {{2, -CU_FILE_HANDLE_NOT_REGISTERED},
                                                 {3, -CU_FILE_INVALID_VALUE},
                                                 {4, -CU_FILE_INVALID_VALUE},
                                                 {5, -EBADF},
                                                 {6, -EIO},
                                                 {7, -CU_FILE_INVALID_VALUE},
                                                 {8, -CU_FILE_INVALID_VALUE}};
  for (auto &[cookie, ret] : want_ret) {
    EXPECT_EQ(got.at(cookie).status, CUFILE_FAILED) << cookie;
    EXPECT_EQ(Signed(got.at(cookie).ret), ret) << cookie;
  }
  EXPECT_EQ(got.at(1).status, CUFILE_COMPLETE);
  EXPECT_EQ(got.at(1).ret, 4096u);
  EXPECT_EQ(got.at(9).status, CUFILE_COMPLETE);
  EXPECT_EQ(got.at(9).ret, 0u);
  const std::string log = Log();
  for (const char *line : {"not a registered handle", "NULL buffer", "negative offset",
                           "not opened for writing", "opcode 7", "mode 0"})
    EXPECT_NE(log.find(line), std::string::npos) << line;
}

TEST_F(BatchInFlight, CancelEndsPendingEntriesAndWaitsForRunningOnes) {
  GateOps gate;
  ScopedSysOps install(&gate);
  SubmitHeldWrites(gate);
  std::atomic<bool> returned{false};
  std::thread canceler([&] {
    EXPECT_EQ(cuFileBatchIOCancel(batch_).err, CU_FILE_SUCCESS);
    returned = true;
  });
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(returned) << "Cancel returned while entries were still writing";
  gate.Open();
  canceler.join();
  const int calls = gate.entered();
  auto got = Collect(kEntries);
  ASSERT_EQ(got.size(), size_t{kEntries});
  int complete = 0, canceled = 0;
  for (auto &[cookie, ev] : got) {
    if (ev.status == CUFILE_COMPLETE) {
      ++complete;
      EXPECT_EQ(ev.ret, 4096u);
    } else {
      EXPECT_EQ(ev.status, CUFILE_CANCELED) << cookie;
      EXPECT_EQ(ev.ret, 0u);
      ++canceled;
    }
  }
  EXPECT_EQ(complete, 2);
  EXPECT_EQ(canceled, kEntries - 2);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(gate.entered(), calls) << "written after Cancel returned";
  EXPECT_EQ(WrittenBlocks(), 2);
}

TEST_F(BatchInFlight, DestroyWaitsForRunningEntriesAndDropsTheRest) {
  GateOps gate;
  ScopedSysOps install(&gate);
  SubmitHeldWrites(gate);
  std::atomic<bool> returned{false};
  std::thread destroyer([&] {
    cuFileBatchIODestroy(batch_);
    returned = true;
  });
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(returned);
  gate.Open();
  destroyer.join();
  const int calls = gate.entered();
  CUfileIOEvents_t ev[1];
  unsigned nr = 1;
  EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 0, &nr, ev, nullptr).err, CU_FILE_INVALID_VALUE);
  batch_ = nullptr;
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(gate.entered(), calls);
  EXPECT_EQ(WrittenBlocks(), 2);
}

TEST_F(BatchInFlight, DriverCloseWaitsForEntriesInFlight) {
  GateOps gate;
  ScopedSysOps install(&gate);
  SubmitHeldWrites(gate);
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    closed = true;
  });
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(closed) << "the driver closed under running batch entries";
  gate.Open();
  closer.join();
  EXPECT_EQ(WrittenBlocks(), kEntries);  // close waits; it does not cancel
  // The events are still there to report; the batch belongs to the old session.
  EXPECT_EQ(Collect(kEntries).size(), size_t{kEntries});
  CUfileIOParams_t p = Entry(CUFILE_WRITE, handles_[0], pattern_.data(), 4096, 0, 1);
  EXPECT_EQ(cuFileBatchIOSubmit(batch_, 1, &p, 0).err, CU_FILE_INVALID_VALUE);
  EXPECT_NE(Log().find("before the driver was closed"), std::string::npos);
}

TEST_F(BatchInFlight, SeveralThreadsDriveTheirOwnBatches) {
  constexpr int kThreads = 4, kRounds = 20, kPer = 16;
  CUfileHandle_t fh = OpenFile("shared", kPer * 4096 * kThreads, 9);
  const std::vector<uint8_t> want = RandomBytes(kPer * 4096 * kThreads, 9);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CUfileBatchHandle_t b = nullptr;
      ASSERT_EQ(cuFileBatchIOSetUp(&b, kPer).err, CU_FILE_SUCCESS);
      std::vector<uint8_t> buf(kPer * 4096);
      for (int r = 0; r < kRounds; ++r) {
        std::vector<CUfileIOParams_t> p;
        for (int i = 0; i < kPer; ++i)
          p.push_back(
              Entry(CUFILE_READ, fh, buf.data() + i * 4096, 4096, (t * kPer + i) * 4096, i));
        ASSERT_EQ(cuFileBatchIOSubmit(b, kPer, p.data(), 0).err, CU_FILE_SUCCESS);
        CUfileIOEvents_t ev[kPer];
        unsigned got = 0;
        while (got < kPer) {
          unsigned nr = kPer - got;
          ASSERT_EQ(cuFileBatchIOGetStatus(b, 1, &nr, ev + got, nullptr).err, CU_FILE_SUCCESS);
          got += nr;
        }
        for (auto &e : ev) ASSERT_EQ(e.status, CUFILE_COMPLETE);
        ASSERT_EQ(0, memcmp(buf.data(), want.data() + t * kPer * 4096, buf.size()));
      }
      cuFileBatchIODestroy(b);
    });
  }
  for (auto &th : threads) th.join();
}

}  // namespace
}  // namespace ufile::test
