// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O through both paths with host threads as the GPU: the
// bytes (reads and writes of many sizes at unaligned offsets, end of file,
// O_DIRECT handles), device-side argument checks, asynchronous tickets, full
// queues, and many threads on many queues with every completion delivered
// exactly once.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <random>
#include <thread>
#include <vector>

#include "devio_fixture.h"

namespace ufile::test {
namespace {

using devio::Ticket;
using devio::ThreadGroup;

class DevioIo : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == UFILE_DEVIO_PATH_NOCPU && !NoCpuAvailable(&why))
      GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  }
  // A set over the given handles on this test's path.
  void Make(std::vector<CUfileHandle_t> hs, ufile_devio_params_t p) {
    p.path = GetParam();
    ASSERT_EQ(q_.Create(hs.data(), static_cast<unsigned>(hs.size()), &p), 0);
    ASSERT_EQ(q_.path(), static_cast<int>(GetParam()));
    v_ = q_.view();
  }
  void Make(std::vector<CUfileHandle_t> hs) { Make(std::move(hs), HostParams(GetParam())); }

  TempDir dir_;
  DeviceQueues q_;
  ufile_devio_view_t v_{};
};

TEST_P(DevioIo, ReadsAreByteExact) {
  RegisteredFile f(dir_.File("r"), (3 << 20) + 1000, 7);
  Make({f.handle()});
  const uint64_t sizes[] = {1, 100, 4095, 4096, 4097, 65536, 65537, 300000, 1 << 20, 3 << 20};
  const int64_t offs[] = {0, 1, 4095, 4096, 12345};
  for (uint64_t size : sizes)
    for (int64_t off : offs) {
      std::vector<uint8_t> buf(size + 2, 0xEE);
      const uint64_t avail = f.data().size() - std::min<uint64_t>(f.data().size(), off);
      const uint64_t want = std::min(size, avail);
      const int64_t r = HostTransfer(v_, off % 2, 0, false, buf.data() + 1, size, off);
      ASSERT_EQ(r, static_cast<int64_t>(want)) << size << "@" << off;
      ASSERT_EQ(0, memcmp(buf.data() + 1, f.data().data() + off, want)) << size << "@" << off;
      ASSERT_EQ(buf[0], 0xEE);
      ASSERT_EQ(buf[want + 1], 0xEE) << "wrote past the bytes read";
    }
}

TEST_P(DevioIo, EndOfFile) {
  RegisteredFile f(dir_.File("e"), 10000, 8);
  Make({f.handle()});
  std::vector<uint8_t> buf(1 << 20);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), buf.size(), 9000), 1000);
  EXPECT_EQ(0, memcmp(buf.data(), f.data().data() + 9000, 1000));
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 10, 10000), 0);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 10, 1 << 30), 0);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 0, 0), 0);
}

TEST_P(DevioIo, WritesAreByteExact) {
  RegisteredFile f(dir_.File("w"), 2 << 20, 9);
  Make({f.handle()});
  std::vector<uint8_t> expect = f.data();
  const uint64_t sizes[] = {1, 4096, 5000, 65536 * 3 + 17, 1 << 20};
  const int64_t offs[] = {0, 3, 8191, 700000};
  uint64_t seed = 100;
  for (uint64_t size : sizes)
    for (int64_t off : offs) {
      std::vector<uint8_t> src = RandomBytes(size, ++seed);
      ASSERT_EQ(HostTransfer(v_, 1, 0, true, src.data(), size, off), static_cast<int64_t>(size));
      if (off + size > expect.size()) expect.resize(off + size);
      memcpy(expect.data() + off, src.data(), size);
    }
  EXPECT_EQ(ReadWholeFile(f.path()), expect);
  // Writing past the end extends the file, as pwrite does.
  std::vector<uint8_t> tail = RandomBytes(100, 5);
  ASSERT_EQ(HostTransfer(v_, 0, 0, true, tail.data(), 100, expect.size() + 50), 100);
  EXPECT_EQ(ReadWholeFile(f.path()).size(), expect.size() + 150);
}

TEST_P(DevioIo, DirectHandlesTakeAlignedAndUnalignedRequests) {
  if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "O_DIRECT refused in " << dir_.path();
  RegisteredFile f(dir_.File("d"), 1 << 20, 10, O_RDWR | O_DIRECT);
  Make({f.handle()});
  EXPECT_GE(v_.files[0].fd_direct, 0);
  EXPECT_EQ(v_.files[0].align, 4096u);
  std::vector<uint8_t> buf(300000);
  for (auto [off, size] : {std::pair<int64_t, uint64_t>{0, 65536}, {4096, 200000}, {5, 7}}) {
    ASSERT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), size, off), static_cast<int64_t>(size));
    ASSERT_EQ(0, memcmp(buf.data(), f.data().data() + off, size)) << size << "@" << off;
  }
  std::vector<uint8_t> src = RandomBytes(12288, 3);
  ASSERT_EQ(HostTransfer(v_, 0, 0, true, src.data(), 12288, 8192), 12288);
  ASSERT_EQ(HostTransfer(v_, 0, 0, true, src.data(), 10, 3), 10);
  std::vector<uint8_t> expect = f.data();
  memcpy(expect.data() + 8192, src.data(), 12288);
  memcpy(expect.data() + 3, src.data(), 10);
  EXPECT_EQ(ReadWholeFile(f.path()), expect);
}

TEST_P(DevioIo, DeviceSideArgumentChecks) {
  RegisteredFile f(dir_.File("c"), 65536, 11);
  RegisteredFile ro(dir_.File("ro"), 65536, 12, O_RDONLY);
  Make({f.handle(), ro.handle()});
  std::vector<uint8_t> buf(1 << 20);
  struct Case {
    const char *what;
    unsigned queue, file;
    bool write;
    void *buf;
    uint64_t size;
    int64_t off;
    int64_t expect;
  } cases[] = {
      {"queue out of range", 2, 0, false, buf.data(), 10, 0, -UFILE_DEVIO_EINVAL},
      {"file out of range", 0, 2, false, buf.data(), 10, 0, -UFILE_DEVIO_EBADF},
      {"write to a read-only file", 0, 1, true, buf.data(), 10, 0, -UFILE_DEVIO_EBADF},
      {"negative offset", 0, 0, false, buf.data(), 10, -1, -UFILE_DEVIO_EINVAL},
      {"NULL buffer", 0, 0, false, nullptr, 10, 0, -UFILE_DEVIO_EFAULT},
      {"offset + size overflows", 0, 0, false, buf.data(), 10, INT64_MAX - 5, -UFILE_DEVIO_EINVAL},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(HostTransfer(v_, c.queue, c.file, c.write, c.buf, c.size, c.off), c.expect) << c.what;
    Ticket t = devio::Submit(ThreadGroup{}, v_, c.queue, c.file, c.write, c.buf, c.size, c.off,
                             false, 0);
    EXPECT_EQ(t.status, c.expect) << c.what;
    EXPECT_EQ(devio::Wait(ThreadGroup{}, v_, t, 0), c.expect) << c.what;
  }
  Ticket big = devio::Submit(ThreadGroup{}, v_, 0, 0, false, buf.data(), v_.staging_bytes + 1, 0,
                             false, 0);
  EXPECT_EQ(big.status, -UFILE_DEVIO_E2BIG);
  ufile_devio_view_t stale = v_;
  stale.abi_version = 0;
  EXPECT_EQ(HostTransfer(stale, 0, 0, false, buf.data(), 10, 0), -UFILE_DEVIO_EINVAL);
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.submitted, 0u) << "a refused request reached a queue";
}

TEST_P(DevioIo, TicketsFullQueueAndDoubleWait) {
  RegisteredFile f(dir_.File("t"), 1 << 20, 13);
  Make({f.handle()});
  const uint32_t depth = v_.depth;
  std::vector<std::vector<uint8_t>> bufs(depth, std::vector<uint8_t>(4096));
  std::vector<Ticket> ts;
  for (uint32_t i = 0; i < depth; ++i) {
    ts.push_back(devio::Submit(ThreadGroup{}, v_, 0, 0, false, bufs[i].data(), 4096,
                               static_cast<int64_t>(i) * 5000, false, 0));
    ASSERT_EQ(ts.back().status, 0) << i;
  }
  std::vector<uint8_t> extra(4096);
  Ticket full = devio::Submit(ThreadGroup{}, v_, 0, 0, false, extra.data(), 4096, 0, false, 0);
  EXPECT_EQ(full.status, -UFILE_DEVIO_EAGAIN);
  Ticket busy = devio::Submit(ThreadGroup{}, v_, 0, 0, false, extra.data(), 4096, 0, true,
                              20 * 1000 * 1000);
  EXPECT_EQ(busy.status, -UFILE_DEVIO_EBUSY) << "waited for a slot nobody gives back";
  // Another queue is unaffected.
  EXPECT_EQ(HostTransfer(v_, 1, 0, false, extra.data(), 4096, 0), 4096);
  for (uint32_t i = 0; i < depth; ++i) {
    int polled = 0;
    for (int k = 0; k < 100000 && polled == 0; ++k) polled = devio::Poll(v_, ts[i]);
    EXPECT_EQ(polled, 1) << i;
    Ticket copy = ts[i];
    EXPECT_EQ(devio::Wait(ThreadGroup{}, v_, ts[i], 0), 4096);
    EXPECT_EQ(0, memcmp(bufs[i].data(), f.data().data() + i * 5000, 4096)) << i;
    EXPECT_EQ(devio::Wait(ThreadGroup{}, v_, ts[i], 0), -UFILE_DEVIO_EINVAL) << "waited twice";
    EXPECT_EQ(devio::Wait(ThreadGroup{}, v_, copy, 0), -UFILE_DEVIO_EINVAL) << "copy waited";
    EXPECT_EQ(devio::Poll(v_, copy), -UFILE_DEVIO_EINVAL);
  }
  // An asynchronous write: its buffer may be reused once submitted.
  std::vector<uint8_t> w = RandomBytes(4096, 77), keep = w;
  Ticket wt = devio::Submit(ThreadGroup{}, v_, 0, 0, true, w.data(), 4096, 8192, false, 0);
  ASSERT_EQ(wt.status, 0);
  std::fill(w.begin(), w.end(), 0);
  EXPECT_EQ(devio::Wait(ThreadGroup{}, v_, wt, 0), 4096);
  std::vector<uint8_t> back(4096);
  EXPECT_EQ(HostTransfer(v_, 1, 0, false, back.data(), 4096, 8192), 4096);
  EXPECT_EQ(back, keep);
}

TEST_P(DevioIo, ManyThreadsManyQueuesEveryCompletionOnce) {
  RegisteredFile a(dir_.File("a"), 4 << 20, 21);
  RegisteredFile b(dir_.File("b"), 4 << 20, 22);
  ufile_devio_params_t p = HostParams(GetParam());
  p.num_queues = 3;
  p.queue_depth = 4;  // fewer slots than threads: claims contend
  p.staging_bytes = 16384;
  p.sq_threads = 1;  // one SQPOLL thread for the three rings (two cores in CI)
  Make({a.handle(), b.handle()}, p);
  constexpr int kThreads = 8, kIters = 150;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::vector<uint8_t> buf(40000);
      for (int i = 0; i < kIters; ++i) {
        const unsigned file = rng() % 2;
        const RegisteredFile &f = file ? b : a;
        const uint64_t size = 1 + rng() % buf.size();
        const int64_t off = static_cast<int64_t>(rng() % (f.data().size() - size));
        const unsigned queue = static_cast<unsigned>(rng() % 3);
        if (rng() % 2) {
          if (HostTransfer(v_, queue, file, false, buf.data(), size, off) !=
                  static_cast<int64_t>(size) ||
              memcmp(buf.data(), f.data().data() + off, size) != 0)
            ++failures;
        } else {
          Ticket tk = devio::Submit(ThreadGroup{}, v_, queue, file, false, buf.data(),
                                    std::min<uint64_t>(size, 16384), off, true, 0);
          const auto n = static_cast<int64_t>(std::min<uint64_t>(size, 16384));
          if (tk.status != 0 || devio::Wait(ThreadGroup{}, v_, tk, 0) != n ||
              memcmp(buf.data(), f.data().data() + off, static_cast<size_t>(n)) != 0)
            ++failures;
        }
      }
    });
  for (auto &t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  const ufile_devio_stats_t s = q_.stats();
  ExpectEachCompletionOnce(s);
  EXPECT_GE(s.submitted, static_cast<uint64_t>(kThreads * kIters));
  for (uint32_t qi = 0; qi < v_.num_queues; ++qi) {
    for (uint32_t s2 = 0; s2 < v_.depth; ++s2)
      EXPECT_EQ(devio::SlotState(v_.queues[qi].slots[s2]), devio::kSlotFree);
    EXPECT_EQ(v_.queues[qi].ctl->held, 0u) << "a slot's place was not given back";
  }
}

// Submits that do not wait for a slot are refused (-EAGAIN) only when the
// queue is full: here threads keep the queue exactly full between them (each
// at most its share of the slots in flight) and claim while others release,
// and no submit may be refused.
TEST_P(DevioIo, SubmitsFindASlotWhileTheQueueHasRoom) {
  RegisteredFile f(dir_.File("r"), 1 << 20, 23);
  ufile_devio_params_t p = HostParams(GetParam());
  p.num_queues = 1;
  p.queue_depth = 8;
  p.staging_bytes = 4096;
  p.sq_threads = 1;
  Make({f.handle()}, p);
  constexpr int kThreads = 4, kEach = 2, kIters = 400;  // 4 x 2 = the 8 slots
  std::atomic<int> refused{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::vector<uint8_t> buf(kEach * 4096);
      for (int i = 0; i < kIters; ++i) {
        Ticket tk[kEach];
        int64_t off[kEach];
        for (int k = 0; k < kEach; ++k) {
          off[k] = static_cast<int64_t>(rng() % (f.data().size() - 4096));
          tk[k] = devio::Submit(ThreadGroup{}, v_, 0, 0, false, buf.data() + k * 4096, 4096,
                                off[k], false, 0);
          if (tk[k].status == -UFILE_DEVIO_EAGAIN) ++refused;
        }
        for (int k = 0; k < kEach; ++k) {
          if (tk[k].status != 0) continue;
          if (devio::Wait(ThreadGroup{}, v_, tk[k], 0) != 4096 ||
              memcmp(buf.data() + k * 4096, f.data().data() + off[k], 4096) != 0)
            ++failures;
        }
      }
    });
  for (auto &t : threads) t.join();
  EXPECT_EQ(refused.load(), 0) << "refused while the queue had room";
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(v_.queues[0].ctl->held, 0u);
  ExpectEachCompletionOnce(q_.stats());
}

// A raw entry naming a descriptor outside the set: the server (kernel or
// proxy) refuses it, and the refusal arrives as that request's result.
TEST_P(DevioIo, ServerErrorsArriveAsPerRequestResults) {
  RegisteredFile f(dir_.File("x"), 65536, 31);
  Make({f.handle()});
  const ufile_devio_queue_t &q = v_.queues[0];
  uint32_t gen = 0;
  const int s = devio::TryClaim(v_, q, &gen);
  ASSERT_GE(s, 0);
  devio::SqeArgs a = devio::MakeSqe(v_, q, s, gen, false, 0, 0, 4096, 0);
  a.fd = 1000;
  devio::SubmitOne(q, s, gen, a);
  EXPECT_EQ(devio::WaitSlot(v_, q, s, 5000000000ull), -EBADF);
  devio::Release(q, s, gen);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v_, 0, 0, false, buf.data(), 4096, 0), 4096);
}

INSTANTIATE_TEST_SUITE_P(Paths, DevioIo,
                         ::testing::Values(UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY),
                         PathParamName);

// The switchable optimizations change how entries are written, not what
// they do.
class DevioOptions : public ::testing::TestWithParam<uint32_t> {};

TEST_P(DevioOptions, EveryOptionMovesTheSameBytes) {
  std::string why;
  TempDir dir;
  RegisteredFile f(dir.File("o"), 1 << 20, 41);
  for (uint32_t path : {UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY}) {
    if (path == UFILE_DEVIO_PATH_NOCPU && !NoCpuAvailable(&why)) continue;
    ufile_devio_params_t p = HostParams(path);
    p.options = GetParam();
    p.sq_threads = 1;  // both rings share one SQPOLL thread
    CUfileHandle_t h = f.handle();
    DeviceQueues q;
    ASSERT_EQ(q.Create(&h, 1, &p), 0) << PathName(path);
    const ufile_devio_view_t v = q.view();
    EXPECT_EQ(v.queues[0].sq_array != nullptr, (GetParam() & UFILE_DEVIO_OPT_TEMPLATES) != 0);
    std::vector<uint8_t> buf(300001);
    for (int rep = 0; rep < 3 * static_cast<int>(v.depth); ++rep) {
      const int64_t off = rep * 1000;
      ASSERT_EQ(HostTransfer(v, rep % 2, 0, false, buf.data(), buf.size(), off),
                static_cast<int64_t>(buf.size()));
      ASSERT_EQ(0, memcmp(buf.data(), f.data().data() + off, buf.size())) << PathName(path);
    }
    EXPECT_EQ(q.Destroy(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Options, DevioOptions,
                         ::testing::Values(0u, UFILE_DEVIO_OPT_TEMPLATES,
                                           UFILE_DEVIO_OPT_FIXED_BUFFERS,
                                           UFILE_DEVIO_OPT_TEMPLATES |
                                               UFILE_DEVIO_OPT_FIXED_BUFFERS));

}  // namespace
}  // namespace ufile::test
