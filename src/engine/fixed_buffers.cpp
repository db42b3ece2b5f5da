// SPDX-License-Identifier: Apache-2.0
#include "engine/fixed_buffers.h"

#include <pthread.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "core/log.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {
constexpr size_t kMaxFixedBytes = size_t{1} << 30;  // io_uring's limit per buffer
}  // namespace

FixedBuffers &FixedBuffers::Get() {
  // Never destroyed: rings detach from thread-exit destructors, which may
  // run after static destruction has begun.
  static FixedBuffers *table = new FixedBuffers;
  return *table;
}

FixedBuffers::FixedBuffers() {
  pthread_atfork(nullptr, nullptr, ChildAfterFork);
}

// The child has one thread: the attached rings were the parent's threads'
// (the caller's own is rebuilt on its next use, see engine/uring_engine),
// and the lock may have been held by one of them.
void FixedBuffers::ChildAfterFork() {
  FixedBuffers &t = Get();
  new (&t.mu_) std::mutex;
  t.rings_.clear();
}

int FixedBuffers::Publish(void *data, size_t size) {
  if (!data || size == 0 || size > kMaxFixedBytes) return kNoFixedSlot;
  std::lock_guard<std::mutex> lock(mu_);
  for (unsigned i = 0; i < kCapacity; ++i) {
    Slot &s = slots_[i];
    if (s.gen.load(std::memory_order_relaxed) != 0) continue;
    if (++next_gen_ == 0) ++next_gen_;
    s.base.store(reinterpret_cast<uintptr_t>(data), std::memory_order_relaxed);
    s.size.store(size, std::memory_order_relaxed);
    s.gen.store(next_gen_, std::memory_order_release);
    return static_cast<int>(i);
  }
  return kNoFixedSlot;
}

void FixedBuffers::Withdraw(int slot) {
  if (slot < 0 || slot >= static_cast<int>(kCapacity)) return;
  std::lock_guard<std::mutex> lock(mu_);
  const iovec none{nullptr, 0};
  for (FixedRing *r : rings_) {
    if (r->gen[slot].load(std::memory_order_relaxed) == 0) continue;
    const int rc = SysOps::Current().UringUpdateBuffer(r->ring, static_cast<unsigned>(slot), &none);
    if (rc < 0) {
      // The ring would keep the old pages: stop using its table altogether.
      UFILE_LOG_ERROR(
          "io_uring: clearing registered buffer %d failed: %s; that ring stops "
          "using registered buffers",
          slot, strerror(-rc));
      r->refused.store(true, std::memory_order_relaxed);
    }
    r->gen[slot].store(0, std::memory_order_relaxed);
  }
  Slot &s = slots_[slot];
  s.gen.store(0, std::memory_order_release);
  s.base.store(0, std::memory_order_relaxed);
  s.size.store(0, std::memory_order_relaxed);
}

bool FixedBuffers::Ready(FixedRing &r, int slot, const void *data, size_t len) {
  if (slot < 0 || slot >= static_cast<int>(kCapacity) || r.refused.load(std::memory_order_relaxed))
    return false;
  const Slot &s = slots_[slot];
  const uint32_t gen = s.gen.load(std::memory_order_acquire);
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  const uintptr_t base = s.base.load(std::memory_order_relaxed);
  if (gen == 0 || at < base || len > s.size.load(std::memory_order_relaxed) - (at - base))
    return false;  // not (inside) a published buffer
  if (r.attached && r.gen[slot].load(std::memory_order_relaxed) == gen) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (!r.attached && !AttachLocked(r)) return false;
  return RegisterLocked(r, slot);
}

void FixedBuffers::Detach(FixedRing &r) {
  if (!r.attached) return;
  std::lock_guard<std::mutex> lock(mu_);
  rings_.erase(std::remove(rings_.begin(), rings_.end(), &r), rings_.end());
  r.attached = false;
}

bool FixedBuffers::AttachLocked(FixedRing &r) {
  const int rc = SysOps::Current().UringRegisterBuffersSparse(r.ring, kCapacity);
  if (rc < 0) {
    RefuseLocked(r, "a sparse buffer table", rc);
    return false;
  }
  if (!r.gen) r.gen = std::make_unique<std::atomic<uint32_t>[]>(kCapacity);
  for (unsigned i = 0; i < kCapacity; ++i) r.gen[i].store(0, std::memory_order_relaxed);
  rings_.push_back(&r);
  r.attached = true;
  return true;
}

bool FixedBuffers::RegisterLocked(FixedRing &r, int slot) {
  const Slot &s = slots_[slot];
  iovec iov{reinterpret_cast<void *>(s.base.load(std::memory_order_relaxed)),
            s.size.load(std::memory_order_relaxed)};
  const int rc = SysOps::Current().UringUpdateBuffer(r.ring, static_cast<unsigned>(slot), &iov);
  if (rc < 0) {
    // Whatever the slot held before is still there: clear it, or stop.
    const iovec none{nullptr, 0};
    if (r.gen[slot].load(std::memory_order_relaxed) != 0 &&
        SysOps::Current().UringUpdateBuffer(r.ring, static_cast<unsigned>(slot), &none) == 0)
      r.gen[slot].store(0, std::memory_order_relaxed);
    RefuseLocked(r, "a buffer", rc);
    return false;
  }
  r.gen[slot].store(s.gen.load(std::memory_order_relaxed), std::memory_order_relaxed);
  registrations_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The ring moves bytes without registration from now on. An attached one
// stays listed, so Withdraw() still clears what its table holds.
void FixedBuffers::RefuseLocked(FixedRing &r, const char *what, int err) {
  refusals_.fetch_add(1, std::memory_order_relaxed);
  r.refused.store(true, std::memory_order_relaxed);
  if (refusal_logged_) return;
  refusal_logged_ = true;
  UFILE_LOG_WARN(
      "io_uring refused to register %s (%s%s); this thread's transfers go on "
      "without registered buffers (logged once)",
      what, strerror(-err), err == -ENOMEM ? ": RLIMIT_MEMLOCK, see ulimit -l" : "");
}

}  // namespace ufile
