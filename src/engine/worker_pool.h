// SPDX-License-Identifier: Apache-2.0
// A fixed set of I/O threads shared by all requests. Run() spreads one
// request over up to n participants: the calling thread always takes part,
// and up to n - 1 pool threads join when free. Work is claimed by the
// participants themselves (see core/transfer), so a late helper finds nothing
// left and returns at once: no thread per request, no idle waiting on a busy
// pool.
// Thread-safety: Run() may be called from any thread, including concurrently.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ufile {

class WorkerPool {
 public:
  explicit WorkerPool(size_t threads);
  ~WorkerPool();  // joins the threads; queued tasks are run first
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  // Calls fn(0) on this thread (nothing when n is 0) and offers fn(1..n-1)
  // to pool threads. An offer a pool thread has not taken by the time fn(0)
  // returns is withdrawn (fn is then not called with that index), so fn must
  // claim its work from shared state rather than rely on its index. Called
  // from a pool thread, only fn(0) runs. Returns when every call that started
  // has returned.
  void Run(size_t n, const std::function<void(size_t)> &fn);
  // Queues fn to run on a pool thread (asynchronous work: batch, streams).
  void Post(std::function<void()> fn);
  // Runs fn once on every pool thread and returns when all have run it: for
  // per-thread state, while the pool is idle (driver open). Each thread takes
  // one task and waits (at most 1 s) until all have started, so none takes
  // two.
  void OnEachThread(const std::function<void()> &fn);
  size_t size() const { return threads_.size(); }
  // Whether the calling thread is a ufile I/O thread: a pool thread (of any
  // pool) or one that called MarkIoThread.
  static bool InPoolThread();
  // Marks the calling thread as a ufile I/O thread that is not a pool thread
  // (its Run calls still offer work to pool threads).
  static void MarkIoThread();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stop_ = false;                        // guarded by mu_
  std::atomic<size_t> sleeping_{0};          // threads blocked in cv_.wait
  std::vector<std::thread> threads_;
};

}  // namespace ufile
