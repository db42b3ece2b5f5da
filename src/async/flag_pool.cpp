// SPDX-License-Identifier: Apache-2.0
#include "async/flag_pool.h"

#include <atomic>

#include "base/log.h"
#include "core/runtime.h"

namespace ufile {
namespace {
constexpr size_t kPage = 4096;
// One slot per cache line: the GPU polls one while the host writes another.
constexpr size_t kStride = 64;
}  // namespace

FlagPool &FlagPool::Get() {
  static FlagPool *pool = new FlagPool();  // never destroyed: holds no memory when idle
  return *pool;
}

Result<uint32_t *> FlagPool::Acquire(Runtime &rt, bool need_pinned) {
  std::unique_lock<std::mutex> lock(mu_);
  if (free_.empty()) {
    lock.unlock();  // leasing may allocate (a CUDA call): not under our lock
    Result<StagingLease> page = rt.staging().TryLease(kPage);
    if (!page.ok()) return page.status();
    if (!*page || (need_pinned && !page->pinned())) {
      UFILE_LOG_INFO(
          "stream I/O: no pinned page for completion flags (%s); running "
          "synchronously",
          *page ? "staging memory is not pinned" : "staging pool exhausted");
      return Status::Op(CU_FILE_ASYNC_NOT_SUPPORTED);
    }
    lock.lock();
    char *base = static_cast<char *>(page->data());
    for (size_t off = 0; off + kStride <= kPage; off += kStride)
      free_.push_back(reinterpret_cast<uint32_t *>(base + off));
    pages_.push_back(std::move(*page));
  }
  uint32_t *slot = free_.back();
  free_.pop_back();
  ++in_use_;
  std::atomic_ref<uint32_t>(slot[0]).store(0, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(slot[1]).store(0, std::memory_order_relaxed);
  return slot;
}

void FlagPool::Release(uint32_t *slot) {
  std::vector<StagingLease> idle;  // returned after the lock
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(slot);
  if (--in_use_ == 0) {
    idle.swap(pages_);
    free_.clear();
  }
}

size_t FlagPool::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

}  // namespace ufile
