// SPDX-License-Identifier: Apache-2.0
// Buffers registered with cuFileBufRegister: non-overlapping address ranges
// with the memory kind resolved once, so I/O on them skips the pointer query
// and can check its bounds.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <shared_mutex>

#include "base/status.h"
#include "gpu/memory.h"

namespace ufile {

struct RegisteredBuffer {
  uintptr_t base = 0;
  size_t length = 0;
  int flags = 0;
  MemInfo mem;
};

class BufferRegistry {
 public:
  // CU_FILE_MEMORY_ALREADY_REGISTERED if the range overlaps a registered one;
  // CU_FILE_GPU_MEMORY_PINNING_FAILED past pinned_limit bytes of GPU memory.
  Status Add(const RegisteredBuffer &buf, size_t pinned_limit);
  // CU_FILE_MEMORY_NOT_REGISTERED unless base starts a registered range.
  Status Remove(uintptr_t base);
  // The registration starting exactly at base.
  std::optional<RegisteredBuffer> Find(uintptr_t base) const;
  size_t count() const;
  size_t device_bytes() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<uintptr_t, RegisteredBuffer> by_base_;  // guarded by mu_
  size_t device_bytes_ = 0;                        // guarded by mu_
};

}  // namespace ufile
