// SPDX-License-Identifier: Apache-2.0
#include "devio/waker.h"

#include <chrono>

#include "devio/ring.h"
#include "sys/thread_name.h"
#include "sys/uring_raw.h"

namespace ufile::devio {

Waker::Waker(std::vector<Ring *> rings, uint32_t poll_us)
    : rings_(std::move(rings)), poll_us_(poll_us ? poll_us : 1), thread_([this] { Loop(); }) {}

Waker::~Waker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Waker::Loop() {
  NameThisThread("ufile-waker");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    for (Ring *r : rings_) {
      const uint32_t flags = __atomic_load_n(r->sq_flags(), __ATOMIC_ACQUIRE);
      // Completions the kernel found no room for wait in its overflow list,
      // and every later one joins them; only io_uring_enter(GETEVENTS) moves
      // them to the ring (as room allows), never the SQPOLL thread.
      if ((flags & kSqCqOverflow) && Uring().enter(r->fd(), 0, 0, kEnterGetEvents) >= 0)
        flushes_.fetch_add(1, std::memory_order_relaxed);
      if (!(flags & kSqNeedWakeup)) continue;
      if (__atomic_load_n(r->sq_tail(), __ATOMIC_ACQUIRE) ==
          __atomic_load_n(r->sq_head(), __ATOMIC_ACQUIRE))
        continue;
      if (Uring().enter(r->fd(), 0, 0, kEnterSqWakeup) >= 0)
        wakeups_.fetch_add(1, std::memory_order_relaxed);
    }
    lock.lock();
    cv_.wait_for(lock, std::chrono::microseconds(poll_us_), [this] { return stop_; });
  }
}

}  // namespace ufile::devio
