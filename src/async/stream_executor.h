// SPDX-License-Identifier: Apache-2.0
// The threads that run stream operations once their stream has reached them.
// They are not I/O pool threads, so a stream operation's ExecuteIo spreads
// over the pool (and the copy lanes) exactly like a synchronous call of the
// same size, instead of running on one pool thread. One thread per operation
// running at the same moment, started on demand and kept for a second when
// idle: an operation never waits for another stream's operation to finish
// (a stream whose I/O is held does not hold the others). They count as ufile
// I/O threads (WorkerPool::InPoolThread), so cuFileDriverClose refuses to
// run on them.
// Thread-safety: Run() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace ufile {

class StreamExecutor {
 public:
  static StreamExecutor &Get();
  // Runs fn on an idle executor thread, starting one if none is idle.
  void Run(std::function<void()> fn);
  size_t threads();

 private:
  StreamExecutor() = default;
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  size_t threads_ = 0;                       // guarded by mu_
  size_t busy_ = 0;                          // guarded by mu_
};

}  // namespace ufile
