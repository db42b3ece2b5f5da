// SPDX-License-Identifier: Apache-2.0
// StagingPool without a GPU (plain aligned memory): size classes, the bound,
// per-thread slots never starving a waiter, and a stress run for deadlocks.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "gpu/staging_pool.h"

namespace ufile {
namespace {

TEST(StagingPool, ClassesAndAlignment) {
  StagingPool pool({4, 64}, {2, 2}, nullptr);
  Result<StagingLease> small = pool.Lease(100);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->size(), 4096u);
  Result<StagingLease> big = pool.Lease(5000);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size(), 65536u);
  Result<StagingLease> huge = pool.Lease(1 << 30);  // larger than any class: the largest
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->size(), 65536u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 4096, 0u);
  EXPECT_FALSE(small->pinned());
}

TEST(StagingPool, BoundedAndTryLeaseDoesNotBlock) {
  StagingPool pool({4}, {2}, nullptr);
  Result<StagingLease> a = pool.Lease(4096), b = pool.Lease(4096);
  Result<StagingLease> c = pool.TryLease(4096);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(*c) << "a third buffer exceeds the class's count";
  a->Reset();
  Result<StagingLease> d = pool.TryLease(4096);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(*d);
}

// Prefill (driver open) allocates up to the class's count, into the shared
// list: leases on any thread then get those buffers, and no more exist.
TEST(StagingPool, PrefillStopsAtTheClassCountAndServesEveryThread) {
  StagingPool pool({4, 16}, {2, 3}, nullptr);
  EXPECT_EQ(pool.Prefill(16384, 5), 3u);
  EXPECT_EQ(pool.Prefill(16384, 1), 0u) << "over the class's count";
  std::set<void *> seen;
  std::thread t([&] {
    std::vector<StagingLease> held;
    for (int i = 0; i < 3; ++i) {
      Result<StagingLease> l = pool.TryLease(16384);
      ASSERT_TRUE(l.ok());
      ASSERT_TRUE(*l) << "a prefilled buffer was not found by another thread";
      seen.insert(l->data());
      held.push_back(std::move(*l));
    }
    Result<StagingLease> none = pool.TryLease(16384);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(*none);
  });
  t.join();
  EXPECT_EQ(seen.size(), 3u);
}

// Buffers returned on one thread sit in that thread's slot; a waiter on
// another thread must still get them.
TEST(StagingPool, WaiterTakesBuffersFromOtherThreadsSlots) {
  StagingPool pool({4}, {2}, nullptr);
  std::thread([&] {
    Result<StagingLease> a = pool.Lease(4096), b = pool.Lease(4096);
  }).join();  // both returned: one cached in that thread's slot
  Result<StagingLease> x = pool.Lease(4096);
  Result<StagingLease> y = pool.Lease(4096);  // blocks unless it scavenges the slot
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_NE(x->data(), y->data());
}

TEST(StagingPool, StressManyThreadsSmallBound) {
  StagingPool pool({4, 16}, {3, 2}, nullptr);
  std::atomic<long> leases{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 3000; ++i) {
        Result<StagingLease> l = pool.Lease(rng() % 2 ? 4096 : 16384);
        ASSERT_TRUE(l.ok());
        ASSERT_TRUE(*l);
        static_cast<volatile char *>(l->data())[0] = static_cast<char>(i);
        ++leases;
      }
    });
  for (auto &th : threads) th.join();
  EXPECT_EQ(leases.load(), 8 * 3000);
  // Every buffer came back: three blocking leases (taking back what sits in
  // the finished threads' slots) get three distinct buffers, and no fourth.
  std::set<void *> seen;
  std::vector<StagingLease> held;
  for (int i = 0; i < 3; ++i) {
    Result<StagingLease> l = pool.Lease(4096);
    ASSERT_TRUE(l.ok());
    seen.insert(l->data());
    held.push_back(std::move(*l));
  }
  EXPECT_EQ(seen.size(), 3u);
  Result<StagingLease> fourth = pool.TryLease(4096);
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(*fourth);
}

}  // namespace
}  // namespace ufile
