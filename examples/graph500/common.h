// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the Graph500 example: a status value, parallel loops
// over std::thread and a pool of threads kept for a whole run.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace g500 {

// 0 and an empty message on success; otherwise a negative errno (or -EINVAL
// for bad data) and what failed.
struct Status {
  int code = 0;
  std::string msg;
  bool ok() const { return code == 0; }
  static Status Ok() { return {}; }
  static Status Error(int c, std::string m) { return {c, std::move(m)}; }
};

// The number of worker threads to use: n, or every hardware thread if 0.
inline unsigned Threads(unsigned n) {
  if (n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

// Calls fn(begin, end, worker) on `threads` contiguous slices of [0, n).
template <class Fn>
void ParallelFor(uint64_t n, unsigned threads, Fn &&fn) {
  threads = Threads(threads);
  if (threads == 1 || n < 2 * threads) {
    fn(uint64_t{0}, n, 0u);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; t++) {
    const uint64_t b = n * t / threads, e = n * (t + 1) / threads;
    pool.emplace_back([&fn, b, e, t] { fn(b, e, t); });
  }
  for (auto &th : pool) th.join();
}

// Calls fn(k, worker) for every k of [0, n), each of up to `threads`
// workers taking the next k; once a call returns false, no worker takes
// another.
template <class Fn>
void ParallelEach(uint64_t n, unsigned threads, Fn &&fn) {
  threads = static_cast<unsigned>(std::min<uint64_t>(Threads(threads), n));
  std::atomic<uint64_t> next{0};
  auto work = [&](unsigned t) {
    for (uint64_t k; (k = next.fetch_add(1, std::memory_order_relaxed)) < n;)
      if (!fn(k, t)) {
        next.store(n, std::memory_order_relaxed);
        return;
      }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; t++) pool.emplace_back(work, t);
  if (threads > 0) work(0);
  for (auto &th : pool) th.join();
}

// Threads made once and kept: Run(fn) calls fn(worker) on every worker and
// returns when all have returned, so a search's levels (many per second on
// small frontiers) pay no thread start. Run is for one caller at a time.
class WorkerPool {
 public:
  explicit WorkerPool(unsigned workers) : n_(Threads(workers)) {
    for (unsigned t = 0; t < n_; t++) threads_.emplace_back([this, t] { Loop(t); });
  }
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto &th : threads_) th.join();
  }
  unsigned size() const { return n_; }
  void Run(const std::function<void(unsigned)> &fn) {
    std::unique_lock<std::mutex> lock(mu_);
    fn_ = &fn;
    running_ = n_;
    generation_++;
    start_.notify_all();
    done_.wait(lock, [this] { return running_ == 0; });
    fn_ = nullptr;
  }

 private:
  void Loop(unsigned t) {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const std::function<void(unsigned)> *fn = fn_;
      lock.unlock();
      (*fn)(t);
      lock.lock();
      if (--running_ == 0) done_.notify_one();
    }
  }

  const unsigned n_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(unsigned)> *fn_ = nullptr;  // guarded by mu_
  uint64_t generation_ = 0;                            // guarded by mu_
  unsigned running_ = 0;                               // guarded by mu_
  bool stop_ = false;                                  // guarded by mu_
};

// SplitMix64's finaliser: a counter-based generator, so that any edge or
// draw can be computed on its own, by any thread, in any order.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A stream of 64-bit draws from one seed, and unbiased draws in [0, bound).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(Mix64(seed ^ 0x6a09e667f3bcc908ull)) {}
  uint64_t Next() { return Mix64(state_++); }
  uint64_t Below(uint64_t bound) {  // bound > 0; rejection keeps it unbiased
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = Next();
    while (r >= limit);
    return r % bound;
  }

 private:
  uint64_t state_;
};

}  // namespace g500
