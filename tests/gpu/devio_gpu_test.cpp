// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O on the GPU (label gpu), on both paths: kernels read
// and write registered handles byte-exactly (1 B .. 64 MiB, unaligned file
// offsets and device addresses, thread/warp/block groups, synchronous and
// asynchronous, warp batches), many blocks on many queues at once; errors
// arrive as per-request results (bad file index, read-only file, end of
// file, injected EIO); the bounded wait fires; destroy is refused while a
// kernel holds a slot. LL reads: devio_ll_gpu_test.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
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
TEST(DevioGpu, NeedsKernels) {
  GTEST_SKIP() << "built without nvcc: no device-I/O kernels";
}
#else

class DevioGpu : public DevioQueueTest {
 protected:
  void ManyBlocks(const RegisteredFile &f, uint32_t opts);
};

TEST_P(DevioGpu, ReadsAreByteExactFrom1ByteTo64MiB) {
  RegisteredFile f(dir_.File("r"), (80u << 20) + 333, 71);
  Make({f.handle()}, Params());
  const uint64_t sizes[] = {1, 3, 4095, 4096, 4097, 65537, (1 << 20) + 5, 16u << 20, 64u << 20};
  const int64_t offs[] = {0, 1, 4096 + 7};
  for (Group g : {Group::kBlock, Group::kWarp, Group::kThread}) {
    DeviceBuffers bufs;
    std::vector<Op> ops;
    std::vector<char *> dsts;
    for (uint64_t size : sizes) {
      if (g == Group::kThread && size > (16u << 20)) continue;  // one thread copying: slow
      for (int64_t off : offs) {
        char *d = bufs.Get(size);
        const unsigned shift = static_cast<unsigned>(off % 5);  // unaligned device addresses too
        Op op;
        op.queue = static_cast<uint32_t>(ops.size() % 4);
        op.dev_ptr = reinterpret_cast<uint64_t>(d + shift);
        op.size = size;
        op.off = off;
        ops.push_back(op);
        dsts.push_back(d);
      }
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
          << GroupName(g) << " " << ops[i].size << "@" << ops[i].off;
      ASSERT_EQ(got[want + shift], 0xEE) << "wrote past the end";
    }
  }
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.submitted, s.reaped);
  EXPECT_EQ(s.timeouts, 0u);
}

TEST_P(DevioGpu, WritesAreByteExact) {
  RegisteredFile f(dir_.File("w"), 1 << 20, 72);
  Make({f.handle()}, Params());
  std::vector<uint8_t> expect = f.data();
  uint64_t seed = 500;
  int64_t next = 3;
  for (Group g : {Group::kBlock, Group::kWarp, Group::kThread}) {
    DeviceBuffers bufs;
    std::vector<Op> ops;
    for (uint64_t size : {uint64_t{1}, uint64_t{4096}, uint64_t{70001}, uint64_t{3u << 20}}) {
      std::vector<uint8_t> src = RandomBytes(size, ++seed);
      Op op;
      op.queue = static_cast<uint32_t>(ops.size() % 4);
      op.write = 1;
      op.dev_ptr = reinterpret_cast<uint64_t>(bufs.Get(size, &src));
      op.size = size;
      op.off = next;
      if (expect.size() < next + size) expect.resize(next + size);
      memcpy(expect.data() + next, src.data(), size);
      next += static_cast<int64_t>(size) + 4099;
      ops.push_back(op);
    }
    std::vector<int64_t> res;
    Run(false, g, ops, &res);
    for (size_t i = 0; i < ops.size(); ++i)
      EXPECT_EQ(res[i], static_cast<int64_t>(ops[i].size)) << GroupName(g) << " op " << i;
  }
  std::vector<uint8_t> got = ReadWholeFile(f.path());
  ASSERT_EQ(got.size(), expect.size());
  // Gaps between the writes past the old end read as zeros (resize's zeros).
  EXPECT_TRUE(got == expect) << "file differs from what the kernels wrote";
}

// Both option sets: the defaults, and pre-built entries without fixed buffers.
TEST_P(DevioGpu, ManyBlocksOnManyQueuesAndAsyncTickets) {
  RegisteredFile f(dir_.File("m"), 64u << 20, 73);
  for (uint32_t opts : {UFILE_DEVIO_OPT_DEFAULT, UFILE_DEVIO_OPT_TEMPLATES,
                        UFILE_DEVIO_OPT_DEFAULT | UFILE_DEVIO_OPT_LL,
                        UFILE_DEVIO_OPT_DEFAULT | UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED}) {
    SCOPED_TRACE("options " + std::to_string(opts));
    ASSERT_EQ(q_.Destroy(), 0);
    ManyBlocks(f, opts);
  }
}

void DevioGpu::ManyBlocks(const RegisteredFile &f, uint32_t opts) {
  ufile_devio_params_t p = Params();
  p.num_queues = 8;
  p.staging_bytes = 256 * 1024;
  p.options = opts;
  Make({f.handle()}, p);
  std::mt19937_64 rng(5);
  for (auto [async, g, n, max] : {std::tuple{false, Group::kBlock, 512, 1u << 20},
                                  std::tuple{true, Group::kBlock, 256, 256u * 1024},
                                  std::tuple{true, Group::kThread, 4096, 4096u},
                                  std::tuple{true, Group::kWarp, 4096, 16384u}}) {
    DeviceBuffers bufs;
    std::vector<Op> ops;
    std::vector<char *> dsts;
    for (int i = 0; i < n; ++i) {
      Op op;
      op.size = 1 + rng() % max;
      op.off = static_cast<int64_t>(rng() % (f.data().size() - op.size));
      op.queue = g == Group::kWarp ? (i / 32) % 8 : i % 8;
      char *d = bufs.Get(op.size);
      op.dev_ptr = reinterpret_cast<uint64_t>(d);
      ops.push_back(op);
      dsts.push_back(d);
    }
    std::vector<int64_t> res;
    Run(async, g, ops, &res);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(res[i], static_cast<int64_t>(ops[i].size))
          << GroupName(g) << " async " << async << " op " << i;
      ASSERT_EQ(0, memcmp(Download(dsts[i], ops[i].size).data(), f.data().data() + ops[i].off,
                          ops[i].size))
          << GroupName(g) << " async " << async << " op " << i;
    }
  }
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.submitted, s.reaped) << "a completion was lost or consumed twice";
  EXPECT_EQ(s.stale, 0u);
}

// Sustained 4 KiB reads with a poll back-off (poll_ns), a second each by
// warps (a request a lane, one doorbell a warp) and by threads reading
// alone, as many lanes as slots. On the H100 VM (Linux 6.18) this load made
// the kernel put a no-CPU ring's completions in its overflow list, where an
// SQPOLL ring leaves them: every wait of that queue timed out, until the
// helper learned to flush the list. Every request completes, byte-exact.
TEST_P(DevioGpu, CompletionsTheKernelHoldsBackStillArrive) {
  RegisteredFile f(dir_.File("p"), 64u << 20, 75);
  void *file_dev = dk::DeviceAlloc(f.data().size());
  ASSERT_NE(file_dev, nullptr);
  ASSERT_TRUE(dk::CopyToDevice(file_dev, f.data().data(), f.data().size()));
  ufile_devio_params_t p = Params();
  p.num_queues = 16;
  p.queue_depth = 512;
  p.staging_bytes = 4096;
  p.sq_threads = 8;
  p.poll_ns = 500;
  p.timeout_us = 3 * 1000 * 1000;
  Make({f.handle()}, p);
  for (Group g : {Group::kWarp, Group::kThread}) {
    dk::LoadCounts c;
    std::string err;
    ASSERT_EQ(
        dk::ReadLoad(v_, g, 64, 128, 4096, file_dev, f.data().size(), 1000 * 1000 * 1000, &c, &err),
        0)
        << err;
    EXPECT_GT(c.ok, 0u) << GroupName(g);
    EXPECT_EQ(c.failed, 0u) << GroupName(g) << ": " << c.ok << " read, first failure "
                            << c.first_failure << " (-1000: wrong bytes)";
  }
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.timeouts, 0u);
  EXPECT_EQ(s.submitted, s.reaped) << "a completion was lost or consumed twice";
  EXPECT_EQ(s.stale, 0u);
  dk::DeviceFree(file_dev);
}

// Warp batches are refused (-EAGAIN) only when their queue is full. 64
// blocks x 4 warps on 16 queues of 512 slots: 16 warps of 32 lanes a queue,
// so at most 512 requests in flight on each. Every lane claimed while others
// released; before a claim reserved a place in the queue's count of held
// slots, 1.2 % of such submits were refused.
TEST_P(DevioGpu, WarpBatchesFindASlotWhileTheQueueHasRoom) {
  RegisteredFile f(dir_.File("w"), 64u << 20, 76);
  void *file_dev = dk::DeviceAlloc(f.data().size());
  ASSERT_NE(file_dev, nullptr);
  ASSERT_TRUE(dk::CopyToDevice(file_dev, f.data().data(), f.data().size()));
  ufile_devio_params_t p = Params();
  p.num_queues = 16;
  p.queue_depth = 512;
  p.staging_bytes = 4096;
  p.sq_threads = 8;
  p.timeout_us = 3 * 1000 * 1000;
  Make({f.handle()}, p);
  dk::LoadCounts c;
  std::string err;
  ASSERT_EQ(dk::ReadLoad(v_, Group::kWarp, 64, 128, 4096, file_dev, f.data().size(),
                         500 * 1000 * 1000, &c, &err),
            0)
      << err;
  EXPECT_GT(c.ok, 0u);
  EXPECT_EQ(c.failed, 0u) << "first failure " << c.first_failure << " (-1000: wrong bytes)";
  EXPECT_EQ(c.eagain, 0u) << "of " << c.ok << " requests, refused while the queue had room";
  const ufile_devio_stats_t s = q_.stats();
  EXPECT_EQ(s.submitted, s.reaped) << "a completion was lost or consumed twice";
  dk::DeviceFree(file_dev);
}

TEST_P(DevioGpu, ErrorsArriveAsPerRequestResults) {
  RegisteredFile f(dir_.File("e"), 1 << 20, 74);
  RegisteredFile ro(dir_.File("ro"), 65536, 75, O_RDONLY);
  Make({f.handle(), ro.handle()}, Params());
  FaultySysOps faulty;  // the proxy path's reads and writes go through the seam
  FaultySysOps::Fault fault;
  fault.at = 300000;
  faulty.Arm(fault);
  ScopedSysOps scope(&faulty);
  DeviceBuffers bufs;
  char *d = bufs.Get(1 << 20);
  auto op = [&](uint32_t file, uint32_t write, uint64_t size, int64_t off) {
    Op o;
    o.file = file;
    o.write = write;
    o.size = size;
    o.off = off;
    o.dev_ptr = reinterpret_cast<uint64_t>(d);
    return o;
  };
  const bool proxy = GetParam() == UFILE_DEVIO_PATH_PROXY;
  std::vector<Op> ops = {op(7, 0, 4096, 0),                // no such file index
                         op(1, 1, 4096, 0),                // read-only file
                         op(0, 0, 4096, -5),               // negative offset
                         op(0, 0, 8192, (1 << 20) - 100),  // crosses the end
                         op(0, 0, 4096, 5 << 20),          // past the end
                         op(0, 0, 4096, 300000 - 10)};     // injected EIO (proxy)
  const int64_t expect[] = {-UFILE_DEVIO_EBADF, -UFILE_DEVIO_EBADF, -UFILE_DEVIO_EINVAL, 100, 0,
                            proxy ? -EIO : 4096};
  for (Group g : {Group::kThread, Group::kBlock}) {
    std::vector<int64_t> res;
    Run(false, g, ops, &res);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i == 5 && g == Group::kBlock) continue;  // the fault fired once
      EXPECT_EQ(res[i], expect[i]) << GroupName(g) << " op " << i;
    }
  }
}

// Reads that take 400 ms (the proxy's server stalls).
class SlowReads : public SysOps {
 public:
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    return SysOps::Pread(fd, buf, len, off);
  }
};

TEST_P(DevioGpu, BoundedWaitFires) {
  RegisteredFile f(dir_.File("b"), 1 << 20, 76);
  ufile_devio_params_t p = Params();
  p.sq_idle_ms = 1;
  p.wake_poll_us = 2000 * 1000;  // no-CPU: the helper wakes a sleeping poller only every 2 s
  p.destroy_wait_ms = 5000;
  Make({f.handle()}, p);
  SlowReads slow;
  ScopedSysOps scope(&slow);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the pollers fall asleep
  DeviceBuffers bufs;
  Op op;
  op.size = 4096;
  op.dev_ptr = reinterpret_cast<uint64_t>(bufs.Get(4096));
  op.timeout_ns = 20 * 1000 * 1000;
  std::vector<int64_t> res;
  Run(false, Group::kWarp, {op}, &res);
  EXPECT_EQ(res[0], -UFILE_DEVIO_ETIMEDOUT);
  EXPECT_EQ(q_.stats().timeouts, 1u);
  EXPECT_EQ(q_.Destroy(), 0) << "destroy waits for the abandoned request, then frees";
}

TEST_P(DevioGpu, DestroyIsRefusedWhileAKernelHoldsASlot) {
  RegisteredFile f(dir_.File("h"), 1 << 20, 77);
  ufile_devio_params_t p = Params();
  p.destroy_wait_ms = 100;
  Make({f.handle()}, p);
  DeviceBuffers bufs;
  char *d = bufs.Get(4096);
  Op op;
  op.size = 4096;
  op.off = 8192;
  op.dev_ptr = reinterpret_cast<uint64_t>(d);
  dk::HeldRequest held;
  std::string err;
  ASSERT_EQ(held.Start(v_, op, &err), 0) << err;
  for (int i = 0; i < 2000 && q_.stats().submitted == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(q_.stats().submitted, 1u);
  EXPECT_EQ(q_.Destroy(), -EBUSY);
  int64_t r = 0;
  ASSERT_EQ(held.Finish(&r, &err), 0) << err;
  EXPECT_EQ(r, 4096) << "a request in flight completes after a refused destroy";
  EXPECT_EQ(0, memcmp(Download(d, 4096).data(), f.data().data() + 8192, 4096));
  EXPECT_EQ(q_.Destroy(), 0);
}

INSTANTIATE_TEST_SUITE_P(Paths, DevioGpu,
                         ::testing::Values(UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY),
                         PathParamName);
#endif

}  // namespace
}  // namespace ufile::test
