// SPDX-License-Identifier: Apache-2.0
// Buffers registered with cuFileBufRegister: non-overlapping address ranges
// with the memory kind resolved once, so I/O on them skips the pointer query
// and can check its bounds. Device and managed memory is charged to the
// session's PinnedBudget (max_device_pinned_mem_size_kb) while registered.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>

#include "base/status.h"
#include "gpu/memory.h"
#include "gpu/pinned_budget.h"

namespace ufile {

struct RegisteredBuffer {
  uintptr_t base = 0;
  size_t length = 0;
  int flags = 0;
  MemInfo mem;
};

class BufferRegistry {
 public:
  // budget may be null: no bound.
  explicit BufferRegistry(PinnedBudget *budget = nullptr) : budget_(budget) {}

  // CU_FILE_MEMORY_ALREADY_REGISTERED if the range overlaps a registered one;
  // CU_FILE_GPU_MEMORY_PINNING_FAILED (logged with the sizes) when device or
  // managed memory would pass the budget.
  Status Add(const RegisteredBuffer &buf);
  // CU_FILE_MEMORY_NOT_REGISTERED unless base starts a registered range.
  Status Remove(uintptr_t base);
  // The registration starting exactly at base.
  std::optional<RegisteredBuffer> Find(uintptr_t base) const;
  size_t count() const;
  size_t device_bytes() const;

 private:
  PinnedBudget *budget_;
  mutable std::shared_mutex mu_;
  std::map<uintptr_t, RegisteredBuffer> by_base_;  // guarded by mu_
  size_t device_bytes_ = 0;                        // guarded by mu_
};

}  // namespace ufile
