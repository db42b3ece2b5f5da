// SPDX-License-Identifier: Apache-2.0
// LL reads (UFILE_DEVIO_OPT_LL, label gpu) on both paths: byte-exact from
// 1 B to 64 KiB in either mode (in place, and staged); errors arrive as
// per-request results; the bounded wait fires and the slot comes back. The
// no-CPU path ignores the option, so there the same reads go through it.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "cpu/devio_fixture.h"
#include "support/faulty_sys_ops.h"
#include "sys/sys_ops.h"

#ifdef UFILE_HAVE_TEST_KERNELS
#include "gpu/devio_gpu_fixture.h"
#endif

namespace ufile::test {
namespace {

#ifndef UFILE_HAVE_TEST_KERNELS
TEST(DevioLLGpu, NeedsKernels) {
  GTEST_SKIP() << "built without nvcc: no device-I/O kernels";
}
#else

class DevioGpu : public DevioQueueTest {
 protected:
  void LLByteExact(const RegisteredFile &f, uint32_t mode);
  void LLErrors(const RegisteredFile &f, const RegisteredFile &ro, uint32_t mode);
};

TEST_P(DevioGpu, LLReadsAreByteExactFrom1ByteTo64KiB) {
  RegisteredFile f(dir_.File("l"), (2u << 20) + 333, 81);
  for (uint32_t mode : {UFILE_DEVIO_OPT_LL, UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED}) {
    SCOPED_TRACE(mode);
    LLByteExact(f, mode);
  }
}

void DevioGpu::LLByteExact(const RegisteredFile &f, uint32_t mode) {
  ufile_devio_params_t p = Params();
  p.options |= mode;
  p.staging_bytes = 256 * 1024;
  Make({f.handle()}, p);
  const bool ll = GetParam() == UFILE_DEVIO_PATH_PROXY;
  EXPECT_EQ(v_.ll_max, ll ? 65536u : 0u);
  EXPECT_EQ((v_.options & UFILE_DEVIO_OPT_LL) != 0, ll);
  const uint64_t sizes[] = {1, 3, 7, 8, 9, 100, 4095, 4096, 4097, 65535, 65536, 65537, 300000};
  const int64_t offs[] = {0, 1, 4096 + 7, (2 << 20) + 333 - 50};  // the last crosses the end
  for (Group g : {Group::kBlock, Group::kWarp, Group::kThread}) {
    DeviceBuffers bufs;
    std::vector<Op> ops;
    std::vector<char *> dsts;
    for (int rep = 0; rep < 2; ++rep)
      for (uint64_t size : sizes)
        for (int64_t off : offs) {
          char *d = bufs.Get(size);
          const unsigned shift = static_cast<unsigned>((ops.size() + off) % 9);
          Op op;
          op.queue = static_cast<uint32_t>(ops.size() % 4);
          op.dev_ptr = reinterpret_cast<uint64_t>(d + shift);
          op.size = size;
          op.off = off;
          ops.push_back(op);
          dsts.push_back(d);
        }
    std::vector<int64_t> res;
    Run(false, g, ops, &res);
    for (size_t i = 0; i < ops.size(); ++i) {
      const uint64_t want = std::min<uint64_t>(ops[i].size, f.data().size() - ops[i].off);
      ASSERT_EQ(res[i], static_cast<int64_t>(want)) << GroupName(g) << " op " << i;
      const unsigned shift =
          static_cast<unsigned>(ops[i].dev_ptr - reinterpret_cast<uint64_t>(dsts[i]));
      std::vector<uint8_t> got = Download(dsts[i], want + shift + 1);
      ASSERT_EQ(0, memcmp(got.data() + shift, f.data().data() + ops[i].off, want))
          << GroupName(g) << " " << ops[i].size << "@" << ops[i].off << "+" << shift;
      for (unsigned k = 0; k < shift; ++k) ASSERT_EQ(got[k], 0xEE) << "wrote before the start";
      ASSERT_EQ(got[want + shift], 0xEE) << "wrote past the end";
    }
  }
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.submitted, s.reaped);
  EXPECT_EQ(s.stale, 0u);
  EXPECT_EQ(s.timeouts, 0u);
  EXPECT_EQ(q_.Destroy(), 0);
}

TEST_P(DevioGpu, LLErrorsArriveAsPerRequestResults) {
  RegisteredFile f(dir_.File("le"), 1 << 20, 82);
  RegisteredFile ro(dir_.File("lro"), 65536, 83, O_RDONLY);
  for (uint32_t mode : {UFILE_DEVIO_OPT_LL, UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(q_.Destroy(), 0);
    LLErrors(f, ro, mode);
  }
}

void DevioGpu::LLErrors(const RegisteredFile &f, const RegisteredFile &ro, uint32_t mode) {
  ufile_devio_params_t p = Params();
  p.options |= mode;
  Make({f.handle(), ro.handle()}, p);
  FaultySysOps faulty;
  FaultySysOps::Fault fault;
  fault.at = 300000;
  faulty.Arm(fault);
  ScopedSysOps scope(&faulty);
  DeviceBuffers bufs;
  char *d = bufs.Get(1 << 20);
  auto op = [&](uint32_t file, uint64_t size, int64_t off) {
    Op o;
    o.file = file;
    o.size = size;
    o.off = off;
    o.dev_ptr = reinterpret_cast<uint64_t>(d);
    return o;
  };
  const bool proxy = GetParam() == UFILE_DEVIO_PATH_PROXY;
  std::vector<Op> ops = {op(7, 4096, 0),                // no such file index
                         op(0, 4096, -5),               // negative offset
                         op(0, 8192, (1 << 20) - 100),  // crosses the end
                         op(0, 4096, 5 << 20),          // past the end
                         op(1, 100, 65536 - 10),        // read-only file, crossing its end
                         op(0, 4096, 300000 - 10)};     // injected EIO (proxy)
  const int64_t expect[] = {-UFILE_DEVIO_EBADF, -UFILE_DEVIO_EINVAL, 100, 0, 10,
                            proxy ? -EIO : 4096};
  for (Group g : {Group::kThread, Group::kBlock}) {
    std::vector<int64_t> res;
    Run(false, g, ops, &res);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i == 5 && g == Group::kBlock) continue;  // the fault fired once
      EXPECT_EQ(res[i], expect[i]) << GroupName(g) << " op " << i;
    }
  }
  EXPECT_EQ(q_.stats().timeouts, 0u);
}

TEST_P(DevioGpu, LLBoundedWaitFiresAndTheSlotComesBack) {
  RegisteredFile f(dir_.File("lb"), 1 << 20, 84);
  ufile_devio_params_t p = Params();
  p.options |= UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED;  // lines: the CPU test
  p.num_queues = 1;
  p.queue_depth = 1;  // the read after the timeout needs the abandoned slot
  p.sq_idle_ms = 1;
  p.wake_poll_us = 2000 * 1000;
  p.destroy_wait_ms = 5000;
  Make({f.handle()}, p);
  DeviceBuffers bufs;
  char *d = bufs.Get(4096);
  Op op;
  op.size = 4096;
  op.off = 4096;
  op.dev_ptr = reinterpret_cast<uint64_t>(d);
  op.timeout_ns = 20 * 1000 * 1000;
  std::vector<int64_t> res;
  {
    HeldReads held;  // proxy: the read is held; no-CPU: the poller sleeps
    ScopedSysOps scope(&held);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the pollers fall asleep
    Run(false, Group::kBlock, {op}, &res);
    EXPECT_EQ(res[0], -UFILE_DEVIO_ETIMEDOUT);
    EXPECT_EQ(held.finished(), 0) << "the wait ended after the read: not bounded by its timeout";
    EXPECT_EQ(q_.stats().timeouts, 1u);
    // The held read is let go; the next read waits for its slot, then works.
    held.Open();
    op.timeout_ns = 0;
    Run(false, Group::kWarp, {op}, &res);
  }
  EXPECT_EQ(res[0], 4096);
  EXPECT_EQ(0, memcmp(Download(d, 4096).data(), f.data().data() + 4096, 4096));
  // No-CPU: the abandoned request's late CQE is dropped (stale); an LL read
  // posts none.
  EXPECT_EQ(q_.stats().stale, GetParam() == UFILE_DEVIO_PATH_PROXY ? 0u : 1u);
  EXPECT_EQ(q_.Destroy(), 0) << "destroy waits for the abandoned request, then frees";
}

INSTANTIATE_TEST_SUITE_P(Paths, DevioGpu,
                         ::testing::Values(UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY),
                         PathParamName);
#endif

}  // namespace
}  // namespace ufile::test
