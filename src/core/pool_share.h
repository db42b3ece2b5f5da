// SPDX-License-Identifier: Apache-2.0
// PoolShare: the participants one request may use while other split requests
// run. Each gets the request parallelism divided by the split requests in
// flight (itself included), at least its own thread. Without it, sixteen
// callers each fanned out over all sixteen I/O threads: 32 threads on 16
// cores, every request cut into 1 MiB pieces, and 16 MiB-256 MiB reads into
// GPU memory at 27-38 GB/s where sixteen plain pread + copy loops moved 49-52
// (H100). The share is fixed when the request starts.
// Thread-safety: any number of shares may be taken concurrently on one counter.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>

namespace ufile {

class PoolShare {
 public:
  // split: the request may be spread over helpers at all (large enough, and
  // a parallelism above 1). An unsplit request is not counted: its share is 1.
  PoolShare(std::atomic<size_t> &running, size_t parallelism, bool split) {
    if (!split || parallelism <= 1) return;
    running_ = &running;
    const size_t n = running.fetch_add(1, std::memory_order_relaxed) + 1;
    parts_ = std::max<size_t>(1, parallelism / n);
    alone_ = n == 1;
  }
  ~PoolShare() {
    if (running_) running_->fetch_sub(1, std::memory_order_relaxed);
  }
  PoolShare(const PoolShare &) = delete;
  PoolShare &operator=(const PoolShare &) = delete;

  size_t parts() const { return parts_; }
  // No other split request was running when this one started.
  bool alone() const { return alone_; }

 private:
  std::atomic<size_t> *running_ = nullptr;
  size_t parts_ = 1;
  bool alone_ = false;
};

}  // namespace ufile
