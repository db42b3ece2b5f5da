// SPDX-License-Identifier: Apache-2.0
#include "engine/ring_registry.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/log.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

constexpr size_t kMaxBufferBytes = size_t{1} << 30;  // io_uring's limit per buffer
const char *const kKindName[2] = {"buffers", "files"};

unsigned FileSlotsAllowed() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  return static_cast<unsigned>(std::min<rlim_t>(rl.rlim_cur, RingRegistry::kMaxFileSlots));
}

}  // namespace

RingRegistry &RingRegistry::Get() {
  // Never destroyed: rings detach from thread-exit destructors, which may
  // run after static destruction has begun.
  static RingRegistry *registry = new RingRegistry;
  return *registry;
}

RingRegistry::RingRegistry() : file_slots_(FileSlotsAllowed()) {
  pthread_atfork(nullptr, nullptr, ChildAfterFork);
}

// The child has one thread: the listed rings were the parent's threads'
// (the caller's own is rebuilt on its next use, see engine/uring_engine),
// and the lock may have been held by one of them.
void RingRegistry::ChildAfterFork() {
  RingRegistry &r = Get();
  new (&r.mu_) std::mutex;
  r.rings_.clear();
}

uint32_t RingRegistry::FillLocked(Slot &s, uintptr_t base, size_t size) {
  if (++next_gen_ == 0) ++next_gen_;
  s.base.store(base, std::memory_order_relaxed);
  s.size.store(size, std::memory_order_relaxed);
  s.gen.store(next_gen_, std::memory_order_release);
  return next_gen_;
}

int RingRegistry::PublishBuffer(void *data, size_t size) {
  if (!data || size == 0 || size > kMaxBufferBytes) return kNoFixedSlot;
  std::lock_guard<std::mutex> lock(mu_);
  for (unsigned i = 0; i < kBufferSlots; ++i) {
    if (buffers_[i].gen.load(std::memory_order_relaxed) != 0) continue;
    FillLocked(buffers_[i], reinterpret_cast<uintptr_t>(data), size);
    return static_cast<int>(i);
  }
  return kNoFixedSlot;
}

uint32_t RingRegistry::PublishFile(int fd) {
  if (fd < 0 || static_cast<unsigned>(fd) >= file_slots_) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  return FillLocked(files_[fd], static_cast<uintptr_t>(fd), 0);
}

void RingRegistry::WithdrawBuffer(int slot) {
  if (slot >= 0 && static_cast<unsigned>(slot) < kBufferSlots) WithdrawSlot(kBuffers, slot, 0);
}

void RingRegistry::WithdrawFile(int fd, uint32_t gen) {
  if (gen != 0 && fd >= 0 && static_cast<unsigned>(fd) < file_slots_) WithdrawSlot(kFiles, fd, gen);
}

void RingRegistry::WithdrawSlot(Kind k, int slot, uint32_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  Slot &s = SlotOf(k, slot);
  const uint32_t now = s.gen.load(std::memory_order_relaxed);
  if (now == 0 || (gen != 0 && now != gen)) return;  // withdrawn, or published anew since
  for (RegisteredRing *r : rings_) {
    RingTable &t = r->tables[k];
    if (!t.attached || t.gen[slot].load(std::memory_order_relaxed) == 0) continue;
    const int rc = Update(*r, k, slot, false);
    if (rc < 0) {
      // The ring would keep the old resource: it stops using its table.
      UFILE_LOG_ERROR(
          "io_uring: clearing registered %s slot %d failed: %s; that ring goes on "
          "without registered %s",
          kKindName[k], slot, strerror(-rc), kKindName[k]);
      t.refused.store(true, std::memory_order_relaxed);
    }
    t.gen[slot].store(0, std::memory_order_relaxed);
  }
  s.gen.store(0, std::memory_order_release);
  s.base.store(0, std::memory_order_relaxed);
  s.size.store(0, std::memory_order_relaxed);
}

bool RingRegistry::BufferReady(RegisteredRing &r, int slot, const void *data, size_t len) {
  RingTable &t = r.tables[kBuffers];
  if (slot < 0 || static_cast<unsigned>(slot) >= kBufferSlots ||
      t.refused.load(std::memory_order_relaxed))
    return false;
  const Slot &s = buffers_[slot];
  const uint32_t gen = s.gen.load(std::memory_order_acquire);
  const uintptr_t at = reinterpret_cast<uintptr_t>(data);
  const uintptr_t base = s.base.load(std::memory_order_relaxed);
  const size_t size = s.size.load(std::memory_order_relaxed);
  if (gen == 0 || at < base || at - base > size || len > size - (at - base))
    return false;  // not (inside) a published buffer
  if (t.attached && t.gen[slot].load(std::memory_order_relaxed) == gen) return true;
  return ReadySlow(r, kBuffers, slot, gen);
}

void RingRegistry::ReadyAllBuffers(RegisteredRing &r) {
  for (unsigned slot = 0; slot < kBufferSlots; ++slot) {
    const Slot &s = buffers_[slot];
    if (s.gen.load(std::memory_order_acquire) == 0) continue;
    // BufferReady checks the address against the slot again: a buffer
    // withdrawn meanwhile is not registered.
    const auto *base = reinterpret_cast<const void *>(s.base.load(std::memory_order_relaxed));
    BufferReady(r, static_cast<int>(slot), base, s.size.load(std::memory_order_relaxed));
  }
}

int RingRegistry::FileSlot(RegisteredRing &r, int fd) {
  RingTable &t = r.tables[kFiles];
  if (fd < 0 || static_cast<unsigned>(fd) >= file_slots_ ||
      t.refused.load(std::memory_order_relaxed))
    return kNoFixedSlot;
  const uint32_t gen = files_[fd].gen.load(std::memory_order_acquire);
  if (gen == 0) return kNoFixedSlot;  // not a registered handle's descriptor
  if (t.attached && t.gen[fd].load(std::memory_order_relaxed) == gen) return fd;
  return ReadySlow(r, kFiles, fd, gen) ? fd : kNoFixedSlot;
}

bool RingRegistry::ReadySlow(RegisteredRing &r, Kind k, int slot, uint32_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  RingTable &t = r.tables[k];
  if (SlotOf(k, slot).gen.load(std::memory_order_relaxed) != gen) return false;  // withdrawn
  if (!t.attached) {
    const unsigned n = Capacity(k);
    const int rc = k == kBuffers ? SysOps::Current().UringRegisterBuffersSparse(r.ring, n)
                                 : SysOps::Current().UringRegisterFilesSparse(r.ring, n);
    if (rc < 0) {
      RefuseLocked(r, k, "a sparse table", rc);
      return false;
    }
    t.gen = std::make_unique<std::atomic<uint32_t>[]>(n);
    t.attached = true;
    if (!r.listed) rings_.push_back(&r);
    r.listed = true;
  }
  const int rc = Update(r, k, slot, true);
  if (rc < 0) {
    // Whatever the slot held before is still there: clear it, or stop.
    if (t.gen[slot].load(std::memory_order_relaxed) != 0 && Update(r, k, slot, false) == 0)
      t.gen[slot].store(0, std::memory_order_relaxed);
    RefuseLocked(r, k, "a slot", rc);
    return false;
  }
  t.gen[slot].store(gen, std::memory_order_relaxed);
  registrations_[k].fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Puts slot's resource in r's table (fill) or clears it: 0 or -errno.
int RingRegistry::Update(RegisteredRing &r, Kind k, int slot, bool fill) {
  const Slot &s = SlotOf(k, slot);
  const unsigned at = static_cast<unsigned>(slot);
  if (k == kFiles)
    return SysOps::Current().UringUpdateFile(r.ring, at,
                                             fill ? static_cast<int>(s.base.load()) : -1);
  const iovec iov =
      fill ? iovec{reinterpret_cast<void *>(s.base.load()), s.size.load()} : iovec{nullptr, 0};
  return SysOps::Current().UringUpdateBuffer(r.ring, at, &iov);
}

void RingRegistry::Detach(RegisteredRing &r) {
  if (r.listed) {
    std::lock_guard<std::mutex> lock(mu_);
    rings_.erase(std::remove(rings_.begin(), rings_.end(), &r), rings_.end());
    r.listed = false;
  }
  for (RingTable &t : r.tables) {  // a new ring may try again
    t.attached = false;
    t.refused.store(false, std::memory_order_relaxed);
  }
}

// The ring goes on without this kind. An attached table stays listed, so
// Withdraw*() still clears what it holds.
void RingRegistry::RefuseLocked(RegisteredRing &r, Kind k, const char *what, int err) {
  refusals_[k].fetch_add(1, std::memory_order_relaxed);
  r.tables[k].refused.store(true, std::memory_order_relaxed);
  if (refusal_logged_[k]) return;
  refusal_logged_[k] = true;
  UFILE_LOG_WARN(
      "io_uring refused to register %s for registered %s (%s%s); this thread's "
      "transfers go on without them (logged once)",
      what, kKindName[k], strerror(-err),
      k == kBuffers && err == -ENOMEM ? ": RLIMIT_MEMLOCK, see ulimit -l" : "");
}

}  // namespace ufile
