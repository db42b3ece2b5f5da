// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O, safety: the bounded wait (and what happens to the
// late completion), injected file-system errors as per-request results,
// teardown refused while device code holds slots or requests are in flight,
// the SQPOLL thread woken by the helper, a set outliving its handles and the
// driver session.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>

#include "devio_fixture.h"
#include "support/faulty_sys_ops.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

using devio::ThreadGroup;
using devio::Ticket;

class DevioSafety : public ::testing::Test {
 protected:
  TempDir dir_;
  RegisteredFile file_{dir_.File("s"), 1 << 20, 51};
};

TEST_F(DevioSafety, ProxyWaitIsBoundedAndTheLateCompletionIsDropped) {
  HeldReads held;
  ScopedSysOps scope(&held);
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  p.num_queues = 1;
  p.queue_depth = 2;
  CUfileHandle_t h = file_.handle();
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  const ufile_devio_view_t v = q.view();
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v, 0, 0, false, buf.data(), 4096, 0, 30 * 1000 * 1000),
            -UFILE_DEVIO_ETIMEDOUT);
  EXPECT_EQ(held.finished(), 0) << "the wait ended after the read: not bounded by its timeout";
  // The abandoned slot is not reusable until its completion arrives; the
  // other one is. Once the late completion is reaped the slot is free.
  Ticket t = devio::Submit(ThreadGroup{}, v, 0, 0, false, buf.data(), 4096, 4096, false, 0);
  ASSERT_EQ(t.status, 0);
  Ticket none = devio::Submit(ThreadGroup{}, v, 0, 0, false, buf.data(), 4096, 0, false, 0);
  EXPECT_EQ(none.status, -UFILE_DEVIO_EAGAIN);
  held.Open();
  EXPECT_EQ(devio::Wait(ThreadGroup{}, v, t, 0), 4096);
  EXPECT_EQ(0, memcmp(buf.data(), file_.data().data() + 4096, 4096));
  const ufile_devio_stats_t s = q.stats();
  EXPECT_EQ(s.timeouts, 1u);
  EXPECT_EQ(s.stale, 1u) << "the late completion must be dropped, not delivered";
  ExpectAllSlotsFree(v);
}

TEST_F(DevioSafety, NoCpuWaitIsBoundedWhileThePollerSleeps) {
  std::string why;
  if (!NoCpuAvailable(&why)) GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_NOCPU);
  p.num_queues = 1;
  p.sq_idle_ms = 1;
  p.wake_poll_us = 1500 * 1000;  // the helper looks only every 1.5 s
  CUfileHandle_t h = file_.handle();
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  const ufile_devio_view_t v = q.view();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the poller falls asleep
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(HostTransfer(v, 0, 0, false, buf.data(), 4096, 0, 20 * 1000 * 1000),
            -UFILE_DEVIO_ETIMEDOUT);
  // The helper wakes the poller; a generous wait then succeeds.
  EXPECT_EQ(HostTransfer(v, 0, 0, false, buf.data(), 4096, 8192, 4000ull * 1000 * 1000), 4096);
  EXPECT_EQ(0, memcmp(buf.data(), file_.data().data() + 8192, 4096));
  EXPECT_EQ(q.stats().timeouts, 1u);
  EXPECT_EQ(q.Destroy(), 0);
}

TEST_F(DevioSafety, TheHelperWakesASleepingPoller) {
  std::string why;
  if (!NoCpuAvailable(&why)) GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_NOCPU);
  p.num_queues = 1;
  p.sq_idle_ms = 1;
  p.wake_poll_us = 1000;
  CUfileHandle_t h = file_.handle();
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  std::vector<uint8_t> buf(4096);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // idle: the poller sleeps
    ASSERT_EQ(HostTransfer(q.view(), 0, 0, false, buf.data(), 4096, i * 4096), 4096) << i;
    ASSERT_EQ(0, memcmp(buf.data(), file_.data().data() + i * 4096, 4096)) << i;
  }
  EXPECT_GE(q.stats().wakeups, 1u) << "requests completed, yet the poller was never woken";
}

TEST_F(DevioSafety, InjectedEioIsThatRequestsResult) {
  FaultySysOps faulty;
  FaultySysOps::Fault f;
  f.op = FaultySysOps::Op::kPread;
  f.at = 200000;
  f.times = 1;
  faulty.Arm(f);
  FaultySysOps::Fault w;
  w.op = FaultySysOps::Op::kPwrite;
  w.at = 5000;
  w.err = ENOSPC;
  faulty.Arm(w);
  ScopedSysOps scope(&faulty);
  ufile_devio_params_t p = HostParams(UFILE_DEVIO_PATH_PROXY);
  CUfileHandle_t h = file_.handle();
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  const ufile_devio_view_t v = q.view();
  std::vector<uint8_t> buf(300000);
  // A large read whose fourth chunk fails: the call returns the error.
  EXPECT_EQ(HostTransfer(v, 0, 0, false, buf.data(), buf.size(), 0), -EIO);
  // The fault fired once: the same read now succeeds.
  EXPECT_EQ(HostTransfer(v, 0, 0, false, buf.data(), buf.size(), 0),
            static_cast<int64_t>(buf.size()));
  EXPECT_EQ(0, memcmp(buf.data(), file_.data().data(), buf.size()));
  EXPECT_EQ(HostTransfer(v, 1, 0, true, buf.data(), 4096, 4096), -ENOSPC);
  EXPECT_EQ(faulty.fired(), 2);
  const ufile_devio_stats_t s = q.stats();
  EXPECT_EQ(s.proxy_errors, 2u);
  // Every slot comes back, once the late completions of the pieces the
  // failed read abandoned (another proxy thread may still be reading one)
  // are reaped.
  EXPECT_TRUE(ReapUntilAllSlotsFree(v));
  ExpectAllSlotsFree(v);
}

class DevioTeardown : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == UFILE_DEVIO_PATH_NOCPU && !NoCpuAvailable(&why))
      GTEST_SKIP() << "no-CPU path unavailable here: " << why;
  }
  TempDir dir_;
  RegisteredFile file_{dir_.File("t"), 1 << 20, 61};
};

TEST_P(DevioTeardown, RefusedWhileDeviceCodeHoldsASlot) {
  ufile_devio_params_t p = HostParams(GetParam());
  p.destroy_wait_ms = 50;
  CUfileHandle_t h = file_.handle();
  ufile_devio_t *dio = nullptr;
  ASSERT_EQ(ufile_devio_create(&dio, &h, 1, &p), 0);
  ufile_devio_view_t v;
  ASSERT_EQ(ufile_devio_get_view(dio, &v), 0);
  std::vector<uint8_t> buf(4096);
  Ticket t = devio::Submit(ThreadGroup{}, v, 0, 0, false, buf.data(), 4096, 0, false, 0);
  ASSERT_EQ(t.status, 0);
  EXPECT_EQ(ufile_devio_destroy(dio, 0), -EBUSY);
  // Closing: new requests are refused, the one in flight still completes.
  EXPECT_EQ(HostTransfer(v, 1, 0, false, buf.data(), 4096, 0), -UFILE_DEVIO_ESHUTDOWN);
  Ticket late = devio::Submit(ThreadGroup{}, v, 1, 0, false, buf.data(), 4096, 0, false, 0);
  EXPECT_EQ(late.status, -UFILE_DEVIO_ESHUTDOWN);
  EXPECT_EQ(devio::Wait(ThreadGroup{}, v, t, 0), 4096);
  EXPECT_EQ(0, memcmp(buf.data(), file_.data().data(), 4096));
  EXPECT_EQ(ufile_devio_destroy(dio, 0), 0);
}

TEST_P(DevioTeardown, ForceSkipsTheSlotCheckButNotUnfinishedRequests) {
  ufile_devio_params_t p = HostParams(GetParam());
  p.destroy_wait_ms = 3000;
  CUfileHandle_t h = file_.handle();
  ufile_devio_t *dio = nullptr;
  ASSERT_EQ(ufile_devio_create(&dio, &h, 1, &p), 0);
  ufile_devio_view_t v;
  ASSERT_EQ(ufile_devio_get_view(dio, &v), 0);
  std::vector<uint8_t> buf(4096);
  // A "kernel" that submitted and exited without waiting.
  Ticket t = devio::Submit(ThreadGroup{}, v, 0, 0, false, buf.data(), 4096, 0, false, 0);
  ASSERT_EQ(t.status, 0);
  EXPECT_EQ(ufile_devio_destroy(dio, UFILE_DEVIO_DESTROY_FORCE), 0);
}

TEST_P(DevioTeardown, WaitsForAnAbandonedRequest) {
  SlowReads slow(200);
  ScopedSysOps scope(&slow);  // proxy only; the kernel path reads at once
  ufile_devio_params_t p = HostParams(GetParam());
  CUfileHandle_t h = file_.handle();
  ufile_devio_t *dio = nullptr;
  ASSERT_EQ(ufile_devio_create(&dio, &h, 1, &p), 0);
  ufile_devio_view_t v;
  ASSERT_EQ(ufile_devio_get_view(dio, &v), 0);
  std::vector<uint8_t> buf(4096);
  const int64_t r = HostTransfer(v, 0, 0, false, buf.data(), 4096, 0, 10 * 1000 * 1000);
  if (GetParam() == UFILE_DEVIO_PATH_PROXY) {
    EXPECT_EQ(r, -UFILE_DEVIO_ETIMEDOUT);
  }
  // Destroy waits until the abandoned read has landed (never unmaps the
  // staging under it).
  EXPECT_EQ(ufile_devio_destroy(dio, 0), 0);
}

TEST_P(DevioTeardown, SetOutlivesItsHandlesAndTheDriverSession) {
  auto f = std::make_unique<RegisteredFile>(dir_.File("o"), 65536, 62);
  ufile_devio_params_t p = HostParams(GetParam());
  CUfileHandle_t h = f->handle();
  DeviceQueues q;
  ASSERT_EQ(q.Create(&h, 1, &p), 0);
  const std::vector<uint8_t> data = f->data();
  f.reset();  // deregistered and its descriptor closed
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  std::vector<uint8_t> buf(65536);
  EXPECT_EQ(HostTransfer(q.view(), 0, 0, false, buf.data(), buf.size(), 0), 65536);
  EXPECT_EQ(buf, data);
  EXPECT_EQ(q.Destroy(), 0);
}

INSTANTIATE_TEST_SUITE_P(Paths, DevioTeardown,
                         ::testing::Values(UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY),
                         PathParamName);

}  // namespace
}  // namespace ufile::test
