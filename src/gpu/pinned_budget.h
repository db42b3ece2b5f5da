// SPDX-License-Identifier: Apache-2.0
// PinnedBudget: the bound properties.max_device_pinned_mem_size_kb puts on
// the memory pinned for one session: the staging buffers ufile pins or
// offers to io_uring to register (gpu/staging_pool), plus the GPU memory
// registered with cuFileBufRegister (core/buffer_registry). Their sum stays
// at or below the limit. The limit is read at each charge, so
// cuFileDriverSetMaxPinnedMemSize bounds later charges; lowering it below
// what is charged frees nothing.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

namespace ufile {

class PinnedBudget {
 public:
  enum Use { kStaging = 0, kRegistered = 1 };

  // limit_kb: the live limit in KiB; it must outlive the budget.
  explicit PinnedBudget(const std::atomic<size_t> &limit_kb) : limit_kb_(limit_kb) {}
  PinnedBudget(const PinnedBudget &) = delete;
  PinnedBudget &operator=(const PinnedBudget &) = delete;

  // Charges bytes to use if every use together stays at or below the limit:
  // true. Else false, and nothing is charged.
  bool TryCharge(Use use, size_t bytes);
  void Release(Use use, size_t bytes);
  size_t used(Use use) const;
  size_t limit_bytes() const;
  // Why a charge of bytes for use was refused, for the log line:
  // "<n> bytes of staging would bring ... past max_device_pinned_mem_size_kb ...".
  std::string Refusal(Use use, size_t bytes) const;

 private:
  const std::atomic<size_t> &limit_kb_;
  mutable std::mutex mu_;
  size_t used_[2] = {0, 0};  // guarded by mu_; by Use
};

}  // namespace ufile
