// SPDX-License-Identifier: Apache-2.0
// Waker: the only host code of the no-CPU path. An SQPOLL thread sleeps
// after sq_thread_idle without work, and only io_uring_enter(SQ_WAKEUP) wakes
// it, which a GPU cannot call. This thread looks every poll_us for a ring
// whose poller sleeps (IORING_SQ_NEED_WAKEUP) while entries wait
// (tail != head) and wakes it, and for a ring whose kernel holds completions
// in its overflow list (IORING_SQ_CQ_OVERFLOW), which only
// io_uring_enter(GETEVENTS) moves into the ring, and flushes it. It never
// reads or writes a request. Thread-safety: the counters may be read from
// any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ufile::devio {

class Ring;

class Waker {
 public:
  Waker(std::vector<Ring *> rings, uint32_t poll_us);
  ~Waker();  // stops and joins
  Waker(const Waker &) = delete;
  Waker &operator=(const Waker &) = delete;

  uint64_t wakeups() const { return wakeups_.load(std::memory_order_relaxed); }
  uint64_t flushes() const { return flushes_.load(std::memory_order_relaxed); }

 private:
  void Loop();
  std::vector<Ring *> rings_;
  uint32_t poll_us_;
  std::atomic<uint64_t> wakeups_{0};
  std::atomic<uint64_t> flushes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ufile::devio
