// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O, LL reads (UFILE_DEVIO_OPT_LL, as lines or staged with
// a completion word: UFILE_DEVIO_OPT_LL_STAGED; proxy path) with host
// threads as the GPU: byte-exact reads of 1 B .. 64 KiB at unaligned offsets
// and buffers (and larger ones falling back to staging), end of file, errors
// as results, the bounded wait and the abandoned slot's reuse, the areas'
// periodic rewrite, many threads mixing LL and staged requests with every
// completion delivered once, teardown waiting for a late LL completion, and
// the option ignored on the no-CPU path.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "devio/queue_set.h"
#include "devio_fixture.h"
#include "support/faulty_sys_ops.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

using devio::ThreadGroup;
using devio::Ticket;
using Clock = std::chrono::steady_clock;

ufile_devio_params_t LLParams(uint32_t opts) {
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  p.options |= opts;
  return p;
}

// Parameter: the LL options (lines, or staged data + completion word).
class DevioLL : public ::testing::TestWithParam<uint32_t> {
 protected:
  void Make(ufile_devio_params_t p) {
    CUfileHandle_t h = file_.handle();
    ASSERT_EQ(q_.Create(&h, 1, &p), 0);
    v_ = q_.view();
  }
  TempDir dir_;
  RegisteredFile file_{dir_.File("ll"), (1 << 20) + 777, 81};
  DeviceQueues q_;
  ufile_devio_view_t v_{};
};

TEST_P(DevioLL, ReadsAreByteExact) {
  Make(LLParams(GetParam()));
  ASSERT_NE(v_.options & UFILE_DEVIO_OPT_LL, 0u);
  EXPECT_EQ(v_.ll_max, 65536u);
  ASSERT_NE(v_.queues[0].ll, nullptr);
  const uint64_t sizes[] = {1, 3, 7, 8, 9, 100, 4095, 4096, 4097, 65535, 65536, 65537, 200000};
  const int64_t offs[] = {0, 1, 4095, 4096, 12345};
  const auto &d = file_.data();
  for (uint64_t size : sizes)
    for (int64_t off : offs)
      for (size_t shift : {0, 1, 4, 7}) {
        std::vector<uint8_t> buf(size + 16, 0xEE);
        const uint64_t want = std::min<uint64_t>(size, d.size() - static_cast<uint64_t>(off));
        const int64_t r = HostTransfer(v_, off % 2, 0, false, buf.data() + shift, size, off);
        ASSERT_EQ(r, static_cast<int64_t>(want)) << size << "@" << off << "+" << shift;
        ASSERT_EQ(0, memcmp(buf.data() + shift, d.data() + off, want)) << size << "@" << off;
        for (size_t i = 0; i < shift; ++i) ASSERT_EQ(buf[i], 0xEE);
        for (size_t i = shift + want; i < buf.size(); ++i)
          ASSERT_EQ(buf[i], 0xEE) << "wrote past the bytes read: " << size << "@" << off;
      }
  // Across the end of the file, and past it.
  std::vector<uint8_t> buf(8192, 0xEE);
  const int64_t near = static_cast<int64_t>(d.size()) - 5;
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, near), 5);
  EXPECT_EQ(0, memcmp(buf.data(), d.data() + near, 5));
  EXPECT_EQ(buf[5], 0xEE);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, static_cast<int64_t>(d.size())), 0);
  EXPECT_EQ(HostTransfer(v_, 1, 0, false, buf.data(), 10, 1ll << 40), 0);
  const ufile_devio_stats_t s = q_.stats();
  ExpectEachCompletionOnce(s);
  ExpectAllSlotsFree(v_);
  EXPECT_EQ(q_.Destroy(), 0);
}

TEST_P(DevioLL, ErrorsArriveAsResults) {
  RegisteredFile ro(dir_.File("ro"), 65536, 82, O_RDONLY);
  FaultySysOps faulty;
  FaultySysOps::Fault f;
  f.op = FaultySysOps::Op::kPread;
  f.at = 0;
  f.times = 1;
  faulty.Arm(f);
  ScopedSysOps scope(&faulty);
  ufile_devio_params_t p = LLParams(GetParam());
  std::vector<CUfileHandle_t> hs = {file_.handle(), ro.handle()};
  ASSERT_EQ(q_.Create(hs.data(), 2, &p), 0);
  v_ = q_.view();
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 0), -EIO);
  EXPECT_EQ(faulty.fired(), 1);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 0), 4096);
  // Device-side checks still come first.
  EXPECT_EQ(HostTransfer(v_, 0, 2, false, buf.data(), 4096, 0), -UFILE_DEVIO_EBADF);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, nullptr, 4096, 0), -UFILE_DEVIO_EFAULT);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, -1), -UFILE_DEVIO_EINVAL);
  EXPECT_EQ(HostTransfer(v_, 9, 0, false, buf.data(), 4096, 0), -UFILE_DEVIO_EINVAL);
  // A raw LL entry the server refuses: the refusal is that request's result,
  // delivered through its LL header.
  const ufile_devio_queue_t &q = v_.queues[0];
  uint32_t gen = 0;
  const int s = devio::TryClaim(v_, q, &gen);
  ASSERT_GE(s, 0);
  devio::SqeArgs a = devio::MakeLLSqe(q, v_.files[0], s, gen, 0, 4096);
  a.fd = INT32_MAX;  // above any RLIMIT_NOFILE: never open (fd 1000 was, once, in a fresh clone)
  devio::SubmitOne(q, s, gen, a);
  const uint64_t *area = devio::LLArea(v_, q, s);
  // Bounded by time, not by a count of loads: 5M loads ran out on a loaded
  // machine and the check then read the slot's previous result (4096).
  uint64_t h = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (static_cast<uint32_t>(h >> 32) != devio::LLFlag(gen) && Clock::now() < deadline)
    h = __atomic_load_n(area, __ATOMIC_ACQUIRE);
  ASSERT_EQ(static_cast<uint32_t>(h >> 32), devio::LLFlag(gen)) << "no LL header in 10 s";
  EXPECT_EQ(static_cast<int32_t>(static_cast<uint32_t>(h)), -EBADF);
  devio::Release(q, s, gen);
  const ufile_devio_stats_t st = q_.stats();
  EXPECT_EQ(st.proxy_errors, 2u);
  ExpectAllSlotsFree(v_);
}

TEST_P(DevioLL, WaitIsBoundedAndTheAbandonedSlotComesBack) {
  HeldReads held;
  ScopedSysOps scope(&held);
  ufile_devio_params_t p = LLParams(GetParam());
  p.num_queues = 1;
  p.queue_depth = 1;  // the next read needs the abandoned slot
  Make(p);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 0, 30 * 1000 * 1000),
            -UFILE_DEVIO_ETIMEDOUT);
  EXPECT_EQ(held.finished(), 0) << "the wait ended after the read: not bounded by its timeout";
  EXPECT_EQ(devio::SlotState(v_.queues[0].slots[0]), devio::kSlotAbandonedLL);
  // Nothing free until the late read posts its header.
  Ticket none = devio::Submit(ThreadGroup{}, v_, 0, 0, false, buf.data(), 4096, 0, false, 0);
  EXPECT_EQ(none.status, -UFILE_DEVIO_EAGAIN);
  held.Open();
  // Destroy waits for the request in flight (the slot itself is not held).
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 4096), 4096);
  EXPECT_EQ(0, memcmp(buf.data(), file_.data().data() + 4096, 4096));
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.timeouts, 1u);
  EXPECT_EQ(s.stale, 0u);
  ExpectAllSlotsFree(v_);
}

TEST_P(DevioLL, TeardownWaitsForALateLLCompletion) {
  HeldReads held;
  ScopedSysOps scope(&held);
  ufile_devio_params_t p = LLParams(GetParam());
  p.destroy_wait_ms = 20000;
  Make(p);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 0, 20 * 1000 * 1000),
            -UFILE_DEVIO_ETIMEDOUT);
  // The read is let go while Destroy runs (or before: either way Destroy
  // must return after it).
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    held.Open();
  });
  EXPECT_EQ(q_.Destroy(), 0);
  EXPECT_EQ(held.finished(), 1) << "freed the LL area while the proxy was still to write it";
  opener.join();
}

// Areas rewritten whole every 2 entries of a slot (instead of 2^20), with
// reads of every size and staged requests interleaved on one slot.
TEST_P(DevioLL, AreasRewrittenWholeKeepReadsExact) {
  const uint32_t prev = devio::QueueSet::SetLLScrubEveryForTests(2);
  ufile_devio_params_t p = LLParams(GetParam());
  p.num_queues = 1;
  p.queue_depth = 1;
  Make(p);
  devio::QueueSet::SetLLScrubEveryForTests(prev);
  std::mt19937_64 rng(5);
  std::vector<uint8_t> buf(100000);
  for (int i = 0; i < 300; ++i) {
    const uint64_t size = 1 + rng() % (i % 3 ? 65536 : buf.size());
    const int64_t off = static_cast<int64_t>(rng() % (file_.data().size() - size));
    const bool write = i % 7 == 3;
    if (write) {
      std::vector<uint8_t> same(file_.data().begin() + off, file_.data().begin() + off + size);
      ASSERT_EQ(HostTransfer(v_, 0, 0, true, same.data(), size, off),
                static_cast<int64_t>(size));  // the same bytes back: the file stays as it is
      continue;
    }
    ASSERT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), size, off), static_cast<int64_t>(size));
    ASSERT_EQ(0, memcmp(buf.data(), file_.data().data() + off, size)) << i;
  }
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.submitted, s.reaped);
  EXPECT_EQ(s.stale, 0u);
}

TEST_P(DevioLL, ManyThreadsMixingLLAndStagedRequests) {
  ufile_devio_params_t p = LLParams(GetParam());
  p.num_queues = 3;
  p.queue_depth = 4;  // fewer slots than threads
  p.staging_bytes = 16384;
  Make(p);
  EXPECT_EQ(v_.ll_max, 16384u);
  constexpr int kThreads = 8, kIters = 150;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const auto &d = file_.data();
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<uint8_t> buf(40000);
      for (int i = 0; i < kIters; ++i) {
        const uint64_t size = 1 + rng() % (rng() % 2 ? 16384 : buf.size());
        const int64_t off = static_cast<int64_t>(rng() % (d.size() - size));
        const unsigned queue = static_cast<unsigned>(rng() % 3);
        if (rng() % 3) {
          if (HostTransfer(v_, queue, 0, false, buf.data(), size, off) !=
                  static_cast<int64_t>(size) ||
              memcmp(buf.data(), d.data() + off, size) != 0)
            ++failures;
        } else {
          const auto n = std::min<uint64_t>(size, 16384);
          Ticket tk = devio::Submit(ThreadGroup{}, v_, queue, 0, false, buf.data(), n, off, true, 0);
          if (tk.status != 0 || devio::Wait(ThreadGroup{}, v_, tk, 0) != static_cast<int64_t>(n) ||
              memcmp(buf.data(), d.data() + off, n) != 0)
            ++failures;
        }
      }
    });
  for (auto &t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const ufile_devio_stats_t s = q_.stats();
  ExpectEachCompletionOnce(s);
  ExpectAllSlotsFree(v_);
  EXPECT_EQ(q_.Destroy(), 0);
}

TEST_P(DevioLL, IgnoredOnTheNoCpuPath) {
  std::string why;
  if (!NoCpuAvailable(&why)) GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  ufile_devio_params_t p = LLParams(GetParam());
  p.path = UFILE_DEVIO_PATH_NOCPU;
  p.sq_threads = 1;
  Make(p);
  EXPECT_EQ(v_.options & UFILE_DEVIO_OPT_LL, 0u);
  EXPECT_EQ(v_.ll_max, 0u);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 100), 4096);
  EXPECT_EQ(0, memcmp(buf.data(), file_.data().data() + 100, 4096));
}

std::string OptsName(const ::testing::TestParamInfo<uint32_t> &info) {
  return (info.param & UFILE_DEVIO_OPT_LL_STAGED) ? "staged" : "lines";
}

INSTANTIATE_TEST_SUITE_P(Modes, DevioLL,
                         ::testing::Values(UFILE_DEVIO_OPT_LL,
                                           UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED),
                         OptsName);

}  // namespace
}  // namespace ufile::test
