// SPDX-License-Identifier: Apache-2.0
// Device-initiated I/O, the no-CPU path's helper (devio/waker): it wakes a
// ring's sleeping SQPOLL thread only while entries wait, and flushes a ring
// whose kernel holds completions in its overflow list. The ring is plain
// memory (the proxy layout) whose flags the test sets as a kernel would;
// io_uring_enter goes through the seam, which records each call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "devio/ring.h"
#include "devio/waker.h"
#include "sys/uring_raw.h"

namespace ufile::devio {
namespace {

std::atomic<int> g_wakeup_calls{0};
std::atomic<int> g_getevents_calls{0};
std::atomic<int> g_other_calls{0};

int RecordEnter(int, unsigned to_submit, unsigned min_complete, unsigned flags) {
  if (to_submit == 0 && min_complete == 0 && flags == kEnterSqWakeup)
    ++g_wakeup_calls;
  else if (to_submit == 0 && min_complete == 0 && flags == kEnterGetEvents)
    ++g_getevents_calls;
  else
    ++g_other_calls;
  return 0;
}

class DevioWaker : public ::testing::Test {
 protected:
  void SetUp() override {
    g_wakeup_calls = g_getevents_calls = g_other_calls = 0;
    RingOptions o;
    o.entries = 8;
    std::string why;
    ring_ = Ring::CreateProxy(o, &why);
    ASSERT_NE(ring_, nullptr) << why;
  }
  void Set(uint32_t *word, uint32_t v) { __atomic_store_n(word, v, __ATOMIC_RELEASE); }
  // Long enough for the helper, polling every 100 us, to look many times.
  static void Pass() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }
  // Whether calls reaches more than zero within 10 s (a loaded machine).
  static bool Eventually(const std::atomic<int> &calls) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (calls == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return calls > 0;
  }

  UringSeam seam_{{RealSetup, RecordEnter, RealRegister}};
  std::unique_ptr<Ring> ring_;
};

TEST_F(DevioWaker, WakesASleepingPollerOnlyWhileEntriesWait) {
  Waker w({ring_.get()}, 100);
  Set(ring_->sq_flags(), kSqNeedWakeup);  // asleep, nothing waiting
  Pass();
  EXPECT_EQ(g_wakeup_calls, 0);
  Set(ring_->sq_tail(), 3);  // entries published
  EXPECT_TRUE(Eventually(g_wakeup_calls));
  EXPECT_GT(w.wakeups(), 0u);
  Set(ring_->sq_flags(), 0);  // awake again
  Pass();
  const int calls = g_wakeup_calls;
  Pass();
  EXPECT_EQ(g_wakeup_calls, calls);
  EXPECT_EQ(g_getevents_calls, 0);
  EXPECT_EQ(g_other_calls, 0);
}

TEST_F(DevioWaker, FlushesCompletionsTheKernelHoldsBack) {
  Waker w({ring_.get()}, 100);
  Pass();
  EXPECT_EQ(g_getevents_calls, 0);
  Set(ring_->sq_flags(), kSqCqOverflow);
  EXPECT_TRUE(Eventually(g_getevents_calls));
  EXPECT_GT(w.flushes(), 0u);
  Set(ring_->sq_flags(), 0);  // the list is empty again
  Pass();
  const int calls = g_getevents_calls;
  Pass();
  EXPECT_EQ(g_getevents_calls, calls);
  EXPECT_EQ(g_wakeup_calls, 0);  // awake, with nothing waiting
  EXPECT_EQ(g_other_calls, 0);
}

}  // namespace
}  // namespace ufile::devio
