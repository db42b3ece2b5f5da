// SPDX-License-Identifier: Apache-2.0
// The state one read or write request shares among its participants (the
// calling thread and pool threads): its plan, the next chunk to claim, and
// the first error or end of file in file order.
// Thread-safety: Claim, Fail and EndOfFile may be called from any
// participant; Outcome once they have all returned.
#pragma once

#include <atomic>
#include <limits>
#include <mutex>

#include "base/log.h"
#include "base/status.h"
#include "core/runtime.h"
#include "core/transfer.h"
#include "gpu/cuda_api.h"
#include "plan/planner.h"

namespace ufile {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

// State shared by the participants of one request.
class Job {
 public:
  Job(Runtime &runtime, const IoRequest &request, const PlanInput &in)
      : rt(runtime), req(request), plan(in) {}

  // Claims the next chunk in file order; false when none is left or the
  // request has failed. Chunks past end of file are not worth reading.
  bool Claim(size_t *i) {
    if (failed_.load(std::memory_order_relaxed)) return false;
    *i = next_.fetch_add(1, std::memory_order_relaxed);
    return HoldsData(*i);
  }
  // Claims the next chunk only if ok(chunk) holds: for a participant that
  // must not block on what the chunk needs (see core/read_pipeline).
  template <class Pred>
  bool TryClaim(size_t *i, Pred ok) {
    size_t n = next_.load(std::memory_order_relaxed);
    while (!failed() && HoldsData(n) && ok(n)) {
      if (next_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
        *i = n;
        return true;
      }
    }
    return false;
  }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Whether a chunk may still be claimed (a hint: another participant may
  // take it first).
  bool unclaimed() const {
    return !failed() && HoldsData(next_.load(std::memory_order_relaxed));
  }
  // One past the last chunk that holds data: the plan's end, or the chunk
  // where the file ended (as known so far).
  size_t end_chunk() const {
    const size_t eof = eof_chunk_.load(std::memory_order_acquire);
    return eof == kNone ? plan.count() : eof + 1;
  }
  void Fail(size_t i, const Status &s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < error_chunk_) {
      error_chunk_ = i;
      error_ = s;
    }
    failed_ = true;
  }
  // A CUDA call of a staging copy failed: logged, and chunk i fails.
  void FailCopy(size_t i, const char *what, CUresult res) {
    UFILE_LOG_ERROR("%s failed: %s", what, CudaErrorString(res).c_str());
    Fail(i, Status::Cuda(res));
  }
  // Chunk i moved only n of its bytes: the file ends there.
  void EndOfFile(size_t i, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < eof_chunk_.load()) {
      eof_chunk_ = i;
      eof_bytes_ = n;
    }
  }
  Result<size_t> Outcome() const {
    if (error_chunk_ != kNone) return error_;
    const size_t eof = eof_chunk_.load();
    if (eof == kNone) return req.size;
    return plan.start_of(eof) + eof_bytes_;
  }

  Runtime &rt;
  const IoRequest &req;
  const Plan plan;
  size_t chunk_size = 0;
  size_t lease_size = 0;  // staging buffer size: a chunk, or less for small requests
  bool sleep_on_copies = false;  // participants sleep, not spin, on staging copies

 private:
  // Whether chunk n is in the plan and not past end of file (as known so
  // far): worth claiming.
  bool HoldsData(size_t n) const {
    return n < plan.count() && n <= eof_chunk_.load(std::memory_order_relaxed);
  }

  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::atomic<size_t> eof_chunk_{kNone};
  std::mutex mu_;
  size_t error_chunk_ = kNone;  // guarded by mu_
  Status error_;                // guarded by mu_
  size_t eof_bytes_ = 0;        // guarded by mu_
};

}  // namespace ufile
