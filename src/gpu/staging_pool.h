// SPDX-License-Identifier: Apache-2.0
// A bounded pool of page-aligned host buffers used to stage data between
// files and GPU memory (and for O_DIRECT with unaligned host memory).
// Size classes and counts come from posix_pool_slab_size_kb/_count. Buffers
// are allocated on first demand and kept until Release(): pinned
// (cuMemHostAlloc, portable) when a GPU is usable, else plain aligned
// memory; if pinning fails (RLIMIT_MEMLOCK) the pool logs once and falls
// back to unpinned memory, which is slower but correct.
// Every buffer is published to engine/ring_registry (while the table has
// room), so io_uring may move its bytes as a registered buffer; it is
// withdrawn before it is freed.
// Pinned or published, a buffer is charged to the session's PinnedBudget
// (max_device_pinned_mem_size_kb) until freed; one the budget refuses is
// plain memory, neither pinned nor published (logged once per pool).
// A lease is move-only and returns its buffer on destruction. A returned
// buffer waits in its thread's slot (one per size class) for that thread's
// next lease, so small I/O from many threads does not queue on one mutex;
// while anyone waits for a buffer, returns go to the shared list and the
// waiter takes back what sits in slots.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace ufile {

class PinnedBudget;
class PrimaryContexts;
class StagingPool;

// One staging buffer as the pool keeps it.
struct StagingBuffer {
  void *data = nullptr;
  bool pinned = false;
  int fixed = -1;  // engine/ring_registry buffer slot, or kNoFixedSlot
  bool charged = false;  // to the pool's PinnedBudget
};

class StagingLease {
 public:
  StagingLease() = default;
  StagingLease(StagingLease &&other) noexcept { *this = std::move(other); }
  StagingLease &operator=(StagingLease &&other) noexcept;
  ~StagingLease() { Reset(); }
  void *data() const { return buf_.data; }
  size_t size() const { return size_; }
  bool pinned() const { return buf_.pinned; }
  // Its engine/ring_registry buffer slot (for Engine::Read/Write), or
  // kNoFixedSlot.
  int fixed() const { return buf_.fixed; }
  explicit operator bool() const { return buf_.data != nullptr; }
  void Reset();

 private:
  friend class StagingPool;
  StagingPool *pool_ = nullptr;
  size_t cls_ = 0;
  size_t size_ = 0;
  StagingBuffer buf_;
};

// Test seam: allocates the unpinned staging buffers, with posix_memalign's
// contract (0 or an errno; the memory is released with free()). nullptr
// restores posix_memalign; returns the previous allocator (nullptr for the
// default). For tests, which install it while no driver session is open.
using StagingHostAlloc = int (*)(void **out, size_t align, size_t size);
StagingHostAlloc InstallStagingHostAlloc(StagingHostAlloc fn);

class StagingPool {
 public:
  // ctxs may be null (no GPU): buffers are then never pinned. budget may be
  // null: no bound.
  StagingPool(const std::vector<size_t> &sizes_kb, const std::vector<size_t> &counts,
              PrimaryContexts *ctxs, PinnedBudget *budget = nullptr);
  ~StagingPool();
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;

  // A buffer of the smallest class holding size bytes (the largest class if
  // none does). Blocks while that class is exhausted. Callers must not hold
  // another lease of the pool while blocking (see core/transfer).
  Result<StagingLease> Lease(size_t size);
  // Like Lease but returns an empty lease instead of blocking.
  Result<StagingLease> TryLease(size_t size);
  size_t largest() const;
  // Allocates up to n buffers of size's class now, while the class is under
  // its limit, into the shared list (driver open: see core/runtime). How
  // many it allocated. May be called from several threads at once.
  size_t Prefill(size_t size, size_t n);
  // Frees every buffer; no lease may be outstanding.
  void Release();

 private:
  using Buffer = StagingBuffer;
  struct Slot {
    std::mutex mu;
    std::vector<Buffer> cached;  // guarded by mu; one per class, data null when empty
  };
  static constexpr size_t kSlots = 64;
  struct SizeClass {
    size_t size = 0;
    size_t limit = 0;
    size_t allocated = 0;       // guarded by mu_
    std::vector<Buffer> free;   // guarded by mu_
  };
  friend class StagingLease;
  Result<StagingLease> LeaseImpl(size_t size, bool block);
  size_t ClassFor(size_t size) const;
  Result<Buffer> Allocate(size_t size);
  // The context that pins a new buffer (see the definition).
  Result<CUcontext> PinningContext();
  // Plain memory of size bytes; published (and charged) when charge.
  Result<Buffer> AllocatePlain(size_t size, bool charge);
  // One buffer of class c against a slot it reserves, allocated without
  // mu_ (held by lock on entry and exit); on failure the slot goes back and
  // waiters wake.
  Result<Buffer> AllocateReserved(SizeClass &c, std::unique_lock<std::mutex> &lock);
  void Free(const Buffer &buf, size_t size);
  void Return(size_t cls, const Buffer &buf);
  Slot &MySlot();
  bool TakeFromSlot(size_t cls, Buffer *out);
  // Moves every slot-cached buffer of class cls to its shared list.
  void Scavenge(size_t cls);

  PrimaryContexts *ctxs_;
  PinnedBudget *budget_;
  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<SizeClass> classes_;  // sorted by size
  std::unique_ptr<Slot[]> slots_;
  std::atomic<int> waiters_{0};
  std::atomic<bool> pin_failed_{false};
  std::atomic<int> last_device_{0};  // the GPU whose primary context pins staging
  std::atomic<bool> budget_logged_{false};
};

}  // namespace ufile
