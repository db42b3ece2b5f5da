// SPDX-License-Identifier: Apache-2.0
// cuFileBatchIO* on host buffers: set-up limits, bad handles and arguments,
// mixed reads and writes over several handles, each event reported once with
// its cookie, min_nr and timeouts, errors per entry, cancel and destroy with
// entries in flight, and the driver's close waiting for them; O_DIRECT files;
// the thread-pool engine and io_uring.
#include <cufile.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <thread>

#include "core/driver.h"
#include "core/runtime.h"
#include "cpu/async_fixture.h"

namespace ufile::test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

CUfileIOParams_t Entry(CUfileOpcode_t op, CUfileHandle_t fh, void *buf, size_t size, off_t file_off,
                       off_t buf_off, uintptr_t cookie) {
  CUfileIOParams_t p{};
  p.mode = CUFILE_BATCH;
  p.opcode = op;
  p.fh = fh;
  p.u.batch.devPtr_base = buf;
  p.u.batch.size = size;
  p.u.batch.file_offset = file_off;
  p.u.batch.devPtr_offset = buf_off;
  p.cookie = reinterpret_cast<void *>(cookie);
  return p;
}

class BatchTest : public AsyncFixture {
 protected:
  void TearDown() override {
    if (batch_) cuFileBatchIODestroy(batch_);
    AsyncFixture::TearDown();
  }
  void Mixed();
  void ShortRead();
  void Direct();
  void SetUpBatch(unsigned nr) { ASSERT_EQ(cuFileBatchIOSetUp(&batch_, nr).err, CU_FILE_SUCCESS); }
  // Collects n events, blocking; fails on a duplicate cookie.
  std::map<uintptr_t, CUfileIOEvents_t> Collect(size_t n) {
    std::map<uintptr_t, CUfileIOEvents_t> got;
    std::vector<CUfileIOEvents_t> ev(n);
    while (got.size() < n) {
      unsigned nr = static_cast<unsigned>(n - got.size());
      EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 1, &nr, ev.data(), nullptr).err, CU_FILE_SUCCESS);
      EXPECT_GE(nr, 1u);
      for (unsigned i = 0; i < nr; ++i) {
        auto c = reinterpret_cast<uintptr_t>(ev[i].cookie);
        EXPECT_TRUE(got.emplace(c, ev[i]).second) << "cookie " << c << " reported twice";
      }
      if (nr == 0) break;
    }
    return got;
  }
  unsigned Poll(unsigned max) {
    std::vector<CUfileIOEvents_t> ev(max + 1);
    timespec zero{0, 0};
    unsigned nr = max;
    EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 0, &nr, ev.data(), &zero).err, CU_FILE_SUCCESS);
    return nr;
  }
  CUfileBatchHandle_t batch_ = nullptr;
};

TEST_F(BatchTest, SetUpAcceptsOneToIoBatchSize) {
  CUfileBatchHandle_t h = nullptr;
  EXPECT_EQ(cuFileBatchIOSetUp(&h, 0).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileBatchIOSetUp(&h, 129).err, CU_FILE_INVALID_VALUE);  // default io_batchsize 128
  EXPECT_EQ(cuFileBatchIOSetUp(nullptr, 4).err, CU_FILE_INVALID_VALUE);
  for (unsigned nr : {1u, 128u}) {
    ASSERT_EQ(cuFileBatchIOSetUp(&h, nr).err, CU_FILE_SUCCESS);
    cuFileBatchIODestroy(h);
  }
  Reopen(8);
  EXPECT_EQ(cuFileBatchIOSetUp(&h, 9).err, CU_FILE_INVALID_VALUE);
  ASSERT_EQ(cuFileBatchIOSetUp(&h, 8).err, CU_FILE_SUCCESS);
  cuFileBatchIODestroy(h);
  EXPECT_NE(Log().find("io_batchsize"), std::string::npos);
}

TEST_F(BatchTest, BadBatchHandlesAreRefusedNeverFollowed) {
  CUfileHandle_t fh = OpenFile("f", 4096, 1);
  CUfileBatchHandle_t dead = nullptr;
  ASSERT_EQ(cuFileBatchIOSetUp(&dead, 4).err, CU_FILE_SUCCESS);
  cuFileBatchIODestroy(dead);
  int on_stack = 0;
  char buf[16];
  CUfileIOParams_t p = Entry(CUFILE_READ, fh, buf, 16, 0, 0, 1);
  for (CUfileBatchHandle_t h : {static_cast<void *>(nullptr), dead, static_cast<void *>(&on_stack),
                                static_cast<void *>(fh), reinterpret_cast<void *>(0x12)}) {
    CUfileIOEvents_t ev[1];
    unsigned nr = 1;
    EXPECT_EQ(cuFileBatchIOSubmit(h, 1, &p, 0).err, CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileBatchIOGetStatus(h, 0, &nr, ev, nullptr).err, CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileBatchIOCancel(h).err, CU_FILE_INVALID_VALUE);
    cuFileBatchIODestroy(h);  // logs, never crashes
  }
  EXPECT_NE(Log().find("not a live batch handle"), std::string::npos);
}

TEST_F(BatchTest, SubmitRefusals) {
  CUfileHandle_t fh = OpenFile("f", 1 << 16, 2);
  SetUpBatch(4);
  std::vector<char> buf(1 << 16);
  std::vector<CUfileIOParams_t> p;
  for (int i = 0; i < 5; ++i)
    p.push_back(Entry(CUFILE_READ, fh, buf.data(), 4096, i * 4096, i * 4096, i));
  EXPECT_EQ(cuFileBatchIOSubmit(batch_, 1, p.data(), 1).err, CU_FILE_INVALID_VALUE);  // flags
  EXPECT_EQ(cuFileBatchIOSubmit(batch_, 1, nullptr, 0).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileBatchIOSubmit(batch_, 0, p.data(), 0).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileBatchIOSubmit(batch_, 5, p.data(), 0).err, CU_FILE_INVALID_VALUE);
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 3, p.data(), 0).err, CU_FILE_SUCCESS);
  // Three slots are held until their events are reported.
  EXPECT_EQ(cuFileBatchIOSubmit(batch_, 2, p.data() + 3, 0).err, CU_FILE_BATCH_FULL);
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 1, p.data() + 3, 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(Collect(4).size(), 4u);
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 4, p.data() + 1, 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(Collect(4).size(), 4u);
  EXPECT_NE(Log().find("slots are free"), std::string::npos);
}

TEST_F(BatchTest, GetStatusRefusals) {
  SetUpBatch(4);
  CUfileIOEvents_t ev[4];
  unsigned nr = 2;
  EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 0, nullptr, ev, nullptr).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 3, &nr, ev, nullptr).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 0, &nr, nullptr, nullptr).err, CU_FILE_INVALID_VALUE);
  for (timespec bad : {timespec{-1, 0}, timespec{0, -1}, timespec{0, 1000000000L}}) {
    nr = 2;
    EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 0, &nr, ev, &bad).err, CU_FILE_INVALID_VALUE);
  }
  nr = 0;  // nothing asked: no array needed
  EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 0, &nr, nullptr, nullptr).err, CU_FILE_SUCCESS);
  nr = 4;  // nothing submitted: min_nr cannot be met, so no wait
  EXPECT_EQ(cuFileBatchIOGetStatus(batch_, 4, &nr, ev, nullptr).err, CU_FILE_SUCCESS);
  EXPECT_EQ(nr, 0u);
}

// Writes to two files and reads from a third in one submission, at odd sizes
// and offsets; then reads the written files back.
void BatchTest::Mixed() {
  constexpr size_t kFile = 1 << 20;
  CUfileHandle_t wa = OpenFile("a", kFile, 10), wb = OpenFile("b", kFile, 11);
  CUfileHandle_t rc = OpenFile("c", kFile, 12);
  const std::vector<uint8_t> src = RandomBytes(kFile, 13), c_data = RandomBytes(kFile, 12);
  std::vector<uint8_t> dst(kFile, 0);
  SetUpBatch(48);
  std::vector<CUfileIOParams_t> p;
  std::map<uintptr_t, size_t> size_of;
  for (int i = 0; i < 48; ++i) {
    const size_t size = 1000 + 777 * i;
    const off_t off = 20000 * i + i;  // regions do not overlap
    const auto cookie = static_cast<uintptr_t>(1000 + i);
    size_of[cookie] = size;
    if (i % 3 == 2)
      p.push_back(Entry(CUFILE_READ, rc, dst.data(), size, off, off, cookie));
    else
      p.push_back(Entry(CUFILE_WRITE, i % 3 ? wb : wa, const_cast<uint8_t *>(src.data()), size, off,
                        off, cookie));
  }
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 48, p.data(), 0).err, CU_FILE_SUCCESS);
  std::map<uintptr_t, CUfileIOEvents_t> got = Collect(48);
  ASSERT_EQ(got.size(), 48u);
  for (auto &[cookie, ev] : got) {
    EXPECT_EQ(ev.status, CUFILE_COMPLETE) << cookie;
    EXPECT_EQ(ev.ret, size_of.at(cookie)) << cookie;
  }
  EXPECT_EQ(Poll(8), 0u);  // each reported once
  const std::vector<uint8_t> a = ReadWholeFile(dir_.File("a")), b = ReadWholeFile(dir_.File("b"));
  for (const CUfileIOParams_t &e : p) {
    const size_t off = e.u.batch.file_offset, n = e.u.batch.size;
    const uint8_t *want = e.opcode == CUFILE_READ ? c_data.data() : src.data();
    const uint8_t *have = e.opcode == CUFILE_READ ? dst.data() : (e.fh == wa ? a : b).data();
    EXPECT_EQ(0, memcmp(have + off, want + off, n)) << "cookie " << e.cookie;
  }
}

TEST_F(BatchTest, MixedReadsAndWritesOverSeveralHandles) {
  Mixed();
}

TEST_F(BatchTest, EveryCompletionIsReportedOnceWithItsCookie) {
  constexpr int kN = 100;
  CUfileHandle_t fh = OpenFile("f", kN * 4096, 3);
  std::vector<char> buf(kN * 4096);
  SetUpBatch(kN);
  std::vector<CUfileIOParams_t> p;
  for (int i = 0; i < kN; ++i)
    p.push_back(Entry(CUFILE_READ, fh, buf.data(), 4096, i * 4096, i * 4096, 0xC00C1E00 + i));
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, kN, p.data(), 0).err, CU_FILE_SUCCESS);
  std::set<uintptr_t> seen;
  while (seen.size() < kN) {
    CUfileIOEvents_t ev[7];
    unsigned nr = 7;
    ASSERT_EQ(cuFileBatchIOGetStatus(batch_, 1, &nr, ev, nullptr).err, CU_FILE_SUCCESS);
    ASSERT_GE(nr, 1u);
    ASSERT_LE(nr, 7u);
    for (unsigned i = 0; i < nr; ++i) {
      EXPECT_EQ(ev[i].status, CUFILE_COMPLETE);
      EXPECT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(ev[i].cookie)).second);
    }
  }
  EXPECT_EQ(*seen.begin(), 0xC00C1E00u);
  EXPECT_EQ(*seen.rbegin(), 0xC00C1E00u + kN - 1);
  EXPECT_EQ(Poll(8), 0u);
}

TEST_F(BatchTest, MinNrAndTimeout) {
  CUfileHandle_t fh = OpenFile("f", 4 * 4096, 4);
  std::vector<char> buf(4 * 4096);
  SetUpBatch(4);
  GateOps gate;
  ScopedSysOps install(&gate);
  std::vector<CUfileIOParams_t> p;
  for (int i = 0; i < 4; ++i)
    p.push_back(Entry(CUFILE_READ, fh, buf.data(), 4096, i * 4096, i * 4096, i));
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 4, p.data(), 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(Poll(4), 0u);
  CUfileIOEvents_t ev[4];
  unsigned nr = 4;
  timespec t{0, 150 * 1000 * 1000};
  const auto start = Clock::now();
  ASSERT_EQ(cuFileBatchIOGetStatus(batch_, 1, &nr, ev, &t).err, CU_FILE_SUCCESS);
  EXPECT_GE(Clock::now() - start, milliseconds(140));
  EXPECT_EQ(nr, 0u);  // timed out: what completed, nothing
  gate.Open();
  nr = 4;
  ASSERT_EQ(cuFileBatchIOGetStatus(batch_, 4, &nr, ev, nullptr).err, CU_FILE_SUCCESS);
  EXPECT_EQ(nr, 4u);
  // min_nr beyond what is outstanding returns when all of it has completed.
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 2, p.data(), 0).err, CU_FILE_SUCCESS);
  nr = 4;
  ASSERT_EQ(cuFileBatchIOGetStatus(batch_, 4, &nr, ev, nullptr).err, CU_FILE_SUCCESS);
  EXPECT_EQ(nr, 2u);
}

void BatchTest::ShortRead() {
  CUfileHandle_t fh = OpenFile("f", 10000, 5);
  std::vector<char> buf(8192);
  SetUpBatch(2);
  CUfileIOParams_t p[2] = {Entry(CUFILE_READ, fh, buf.data(), 8192, 8192, 0, 1),
                           Entry(CUFILE_READ, fh, buf.data(), 100, 20000, 0, 2)};
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, 2, p, 0).err, CU_FILE_SUCCESS);
  auto got = Collect(2);
  EXPECT_EQ(got.at(1).status, CUFILE_COMPLETE);
  EXPECT_EQ(got.at(1).ret, 10000u - 8192u);
  EXPECT_EQ(got.at(2).status, CUFILE_COMPLETE);
  EXPECT_EQ(got.at(2).ret, 0u);
}

TEST_F(BatchTest, ShortReadAtEndOfFileCompletes) {
  ShortRead();
}

// An O_DIRECT file: block-aligned entries go to the engine with their group,
// unaligned ones (offset, size or host address) through the planner; a read
// at the end of the file is short.
void BatchTest::Direct() {
  if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "no O_DIRECT in " << dir_.path();
  constexpr size_t kFile = 256 << 10;
  const std::vector<uint8_t> data = RandomBytes(kFile, 21), src = RandomBytes(kFile, 22);
  CUfileHandle_t fh = OpenFile("d", kFile, 21, O_RDWR | O_DIRECT);
  // One block more than the file: the last read asks for more than is left.
  std::unique_ptr<uint8_t, decltype(&free)> buf(
      static_cast<uint8_t *>(aligned_alloc(4096, kFile + 8192)), &free);
  std::unique_ptr<uint8_t, decltype(&free)> in(static_cast<uint8_t *>(aligned_alloc(4096, kFile)),
                                               &free);
  std::memcpy(in.get(), src.data(), kFile);
  struct Want {
    CUfileOpcode_t op;
    size_t size;
    off_t off;     // file and buffer offset
    size_t bytes;  // expected result
  };
  const std::vector<Want> want = {
      {CUFILE_READ, 4096, 0, 4096},
      {CUFILE_READ, 8192, 8192, 8192},
      {CUFILE_READ, 3000, 40000, 3000},
      {CUFILE_READ, 4096, 65536 + 1, 4096},
      {CUFILE_WRITE, 4096, 131072, 4096},
      {CUFILE_WRITE, 5000, 150001, 5000},
      {CUFILE_READ, 8192, kFile - 4096, 4096},
  };
  SetUpBatch(static_cast<unsigned>(want.size()));
  std::vector<CUfileIOParams_t> p;
  for (size_t i = 0; i < want.size(); ++i) {
    const Want &w = want[i];
    uint8_t *mem = w.op == CUFILE_READ ? buf.get() : in.get();
    // The read into an unaligned address stays at a file offset that is aligned.
    const off_t file_off = w.off == 65536 + 1 ? 65536 : w.off;
    p.push_back(Entry(w.op, fh, mem, w.size, file_off, w.off, i + 1));
  }
  ASSERT_EQ(cuFileBatchIOSubmit(batch_, p.size(), p.data(), 0).err, CU_FILE_SUCCESS);
  auto got = Collect(p.size());
  ASSERT_EQ(got.size(), p.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const CUfileIOEvents_t &ev = got.at(i + 1);
    ASSERT_EQ(ev.status, CUFILE_COMPLETE) << i << ": ret " << static_cast<int64_t>(ev.ret);
    EXPECT_EQ(ev.ret, want[i].bytes) << i;
    if (want[i].op != CUFILE_READ) continue;
    const size_t file_off = p[i].u.batch.file_offset;
    EXPECT_EQ(0, memcmp(buf.get() + want[i].off, data.data() + file_off, want[i].bytes)) << i;
  }
  const std::vector<uint8_t> after = ReadWholeFile(dir_.File("d"));
  ASSERT_EQ(after.size(), kFile);
  EXPECT_EQ(0, memcmp(after.data() + 131072, src.data() + 131072, 4096));
  EXPECT_EQ(0, memcmp(after.data() + 150001, src.data() + 150001, 5000));
  EXPECT_EQ(0, memcmp(after.data(), data.data(), 131072)) << "bytes outside the writes changed";
}

TEST_F(BatchTest, DirectIoAlignedAndUnalignedEntries) {
  Direct();
}

// The same with the io_uring engine, where a group's entries go to the ring
// in one submission.
class BatchUringTest : public BatchTest {
 protected:
  void SetUp() override {
    BatchTest::SetUp();
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    ASSERT_TRUE(g.ok());
    if (std::string_view(g->runtime().engine().name()) != "io_uring")
      GTEST_SKIP() << "io_uring is not usable here (the engine fell back to POSIX)";
  }
  ScopedEnv uring_env_{"UFILE_ENGINE", std::string("io_uring")};
};

TEST_F(BatchUringTest, MixedReadsAndWritesOverSeveralHandles) {
  Mixed();
}
TEST_F(BatchUringTest, ShortReadAtEndOfFileCompletes) {
  ShortRead();
}
TEST_F(BatchUringTest, DirectIoAlignedAndUnalignedEntries) {
  Direct();
}

}  // namespace
}  // namespace ufile::test
