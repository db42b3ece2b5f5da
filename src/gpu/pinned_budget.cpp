// SPDX-License-Identifier: Apache-2.0
#include "gpu/pinned_budget.h"

#include <cstdint>

namespace ufile {

size_t PinnedBudget::limit_bytes() const {
  const size_t kb = limit_kb_.load(std::memory_order_relaxed);
  return kb > SIZE_MAX / 1024 ? SIZE_MAX : kb * 1024;
}

bool PinnedBudget::TryCharge(Use use, size_t bytes) {
  const size_t limit = limit_bytes();
  std::lock_guard<std::mutex> lock(mu_);
  const size_t total = used_[kStaging] + used_[kRegistered];
  if (bytes > limit || total > limit - bytes) return false;
  used_[use] += bytes;
  return true;
}

void PinnedBudget::Release(Use use, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_[use] -= bytes < used_[use] ? bytes : used_[use];
}

size_t PinnedBudget::used(Use use) const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_[use];
}

std::string PinnedBudget::Refusal(Use use, size_t bytes) const {
  const size_t limit_kb = limit_kb_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  return std::to_string(bytes) + (use == kStaging ? " bytes of staging" : " bytes of GPU memory") +
         " would pass max_device_pinned_mem_size_kb (" + std::to_string(limit_kb) +
         " KiB): pinned now " + std::to_string(used_[kStaging]) + " bytes of staging and " +
         std::to_string(used_[kRegistered]) + " bytes of registered GPU memory";
}

}  // namespace ufile
