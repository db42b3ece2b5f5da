// SPDX-License-Identifier: Apache-2.0
// core/pool_share: a split request's share of the pool is the parallelism
// divided by the split requests running (itself included), at least 1; an
// unsplit request is neither counted nor spread; the count goes back down
// when a share ends, also under concurrency.
#include "core/pool_share.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace ufile {
namespace {

TEST(PoolShare, AloneGetsEverything) {
  std::atomic<size_t> running{0};
  {
    PoolShare s(running, 16, true);
    EXPECT_EQ(s.parts(), 16u);
    EXPECT_TRUE(s.alone());
    EXPECT_EQ(running.load(), 1u);
  }
  EXPECT_EQ(running.load(), 0u);
}

TEST(PoolShare, UnsplitIsNotCounted) {
  std::atomic<size_t> running{0};
  PoolShare small(running, 16, false);
  PoolShare serial(running, 1, true);
  EXPECT_EQ(small.parts(), 1u);
  EXPECT_EQ(serial.parts(), 1u);
  EXPECT_FALSE(small.alone());
  EXPECT_EQ(running.load(), 0u);
  PoolShare big(running, 16, true);
  EXPECT_EQ(big.parts(), 16u);  // the unsplit ones took nothing
}

TEST(PoolShare, LaterRequestsGetLess) {
  std::atomic<size_t> running{0};
  std::vector<std::unique_ptr<PoolShare>> held;
  const size_t want[] = {16, 8, 5, 4, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  for (size_t i = 0; i < std::size(want); ++i) {
    held.push_back(std::make_unique<PoolShare>(running, 16, true));
    EXPECT_EQ(held.back()->parts(), want[i]) << "request " << i + 1;
    EXPECT_EQ(held.back()->alone(), i == 0);
  }
  held.clear();
  PoolShare again(running, 16, true);
  EXPECT_EQ(again.parts(), 16u);
  EXPECT_TRUE(again.alone());
}

TEST(PoolShare, ConcurrentSharesBalance) {
  std::atomic<size_t> running{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        PoolShare s(running, 16, true);
        if (s.parts() < 2 || s.parts() > 16) ++bad;  // at most 8 run at once
      }
    });
  for (auto &t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(running.load(), 0u);
}

}  // namespace
}  // namespace ufile
