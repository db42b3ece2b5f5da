// SPDX-License-Identifier: Apache-2.0
#include "engine/worker_pool.h"

#include <chrono>
#include <memory>

#include "sys/thread_name.h"

namespace ufile {

WorkerPool::WorkerPool(size_t threads) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto &t : threads_) t.join();
}

void WorkerPool::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
  }
  if (sleeping_.load(std::memory_order_acquire) > 0) cv_.notify_one();
}

namespace {
thread_local bool t_in_pool = false;
thread_local bool t_io_thread = false;  // MarkIoThread

// Shared by one Run() and its helper tasks. A helper that has not started
// when the caller finishes never starts, so the caller never waits behind
// unrelated queued work.
struct RunState {
  std::mutex mu;
  std::condition_variable cv;
  size_t started = 0;
  size_t finished = 0;
  bool closed = false;
};
}  // namespace

bool WorkerPool::InPoolThread() { return t_in_pool || t_io_thread; }
void WorkerPool::MarkIoThread() { t_io_thread = true; }

void WorkerPool::Run(size_t n, const std::function<void(size_t)> &fn) {
  // A pool thread never waits for other pool threads: that could deadlock.
  if (n == 0) return;
  size_t helpers = (n > 1 && !t_in_pool) ? std::min(n - 1, threads_.size()) : 0;
  if (helpers == 0) {
    fn(0);
    return;
  }
  auto state = std::make_shared<RunState>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 1; i <= helpers; ++i)
      queue_.push_back([&fn, i, state] {
        {
          std::lock_guard<std::mutex> l(state->mu);
          if (state->closed) return;
          ++state->started;
        }
        fn(i);
        std::lock_guard<std::mutex> l(state->mu);
        ++state->finished;
        state->cv.notify_all();
      });
  }
  // Only sleeping threads need a wake-up, and only as many as there are
  // offers: busy ones find the work when done, and a thread woken for
  // nothing costs a context switch, CPU and, under concurrent callers,
  // their bytes per second.
  const size_t asleep = sleeping_.load(std::memory_order_acquire);
  if (asleep > 0) {
    if (helpers >= asleep)
      cv_.notify_all();
    else
      for (size_t i = 0; i < helpers; ++i) cv_.notify_one();
  }
  fn(0);
  std::unique_lock<std::mutex> lock(state->mu);
  state->closed = true;
  state->cv.wait(lock, [&] { return state->finished == state->started; });
}

void WorkerPool::OnEachThread(const std::function<void()> &fn) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    size_t started = 0, finished = 0;
  };
  auto state = std::make_shared<State>();
  const size_t n = threads_.size();
  for (size_t i = 0; i < n; ++i)
    Post([&fn, state, n] {
      {
        std::unique_lock<std::mutex> lock(state->mu);
        ++state->started;
        state->cv.notify_all();
        state->cv.wait_for(lock, std::chrono::seconds(1), [&] { return state->started == n; });
      }
      fn();
      std::lock_guard<std::mutex> lock(state->mu);
      ++state->finished;
      state->cv.notify_all();
    });
  std::unique_lock<std::mutex> lock(state->mu);
  state->cv.wait(lock, [&] { return state->finished == n; });
}

void WorkerPool::Loop() {
  t_in_pool = true;
  NameThisThread("ufile-pool");
  for (;;) {
    // No spinning before sleeping: work arrives a request at a time, so a
    // short spin rarely finds any and costs CPU on every idle thread.
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!stop_ && queue_.empty()) {
        // Registering as a sleeper and re-checking under mu_ pairs with
        // the producers' check of sleeping_ after they publish work.
        sleeping_.fetch_add(1, std::memory_order_acq_rel);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        sleeping_.fetch_sub(1, std::memory_order_acq_rel);
      }
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace ufile
