// SPDX-License-Identifier: Apache-2.0
// Long-lived host memory (the staging pool's buffers) published for
// io_uring's registered ("fixed") buffers. A transfer into or out of
// registered memory skips the kernel's pinning and unpinning of its pages on
// every request: a third of an O_DIRECT read's CPU on the H100 machine
// (docs/BENCHMARKS.md, session 7).
//
// The table has kCapacity slots. Publish() puts a buffer in a free slot
// under a new generation. Each thread's ring holds a sparse buffer table of
// the same size and registers a slot the first time it moves bytes through
// it (Ready()), then keeps it. Withdraw() clears the slot from every ring
// before it returns, so the memory may then be freed and its address reused
// without any ring moving bytes into the old pages. A request in flight
// keeps its own reference to the pages it uses, so clearing never races a
// transfer (and no slot is withdrawn while its buffer is leased anyway).
//
// Registration pins pages and, without CAP_IPC_LOCK, is charged to the
// user's RLIMIT_MEMLOCK once per ring. A ring whose table or a registration
// is refused moves bytes without registration from then on (logged once per
// process): correct, with the per-request pinning back.
//
// Thread-safety: every member may be called from any thread. A FixedRing is
// used by its owner thread, except that Withdraw() updates it (under the
// table's lock, through the kernel, which serialises with the owner's use).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

struct io_uring;

namespace ufile {

constexpr int kNoFixedSlot = -1;

// One ring's view of the table.
struct FixedRing {
  io_uring *ring = nullptr;
  bool attached = false;             // has a sparse table and is listed; set by its owner
  std::atomic<bool> refused{false};  // moves bytes without registration from now on
  // Generation of the buffer registered in each slot; 0: none.
  std::unique_ptr<std::atomic<uint32_t>[]> gen;
};

class FixedBuffers {
 public:
  static constexpr unsigned kCapacity = 1024;

  static FixedBuffers &Get();

  // Publishes [data, data + size); returns its slot, or kNoFixedSlot when the
  // table is full or size is 0 or over io_uring's 1 GiB limit.
  int Publish(void *data, size_t size);
  // Withdraws slot (kNoFixedSlot: nothing); every ring has dropped it when
  // this returns.
  void Withdraw(int slot);

  // Whether ring r may move [data, data + len) through slot as a fixed
  // buffer: attaches r (its sparse table) and registers the slot on first
  // use. False sends the caller to an ordinary read or write.
  bool Ready(FixedRing &r, int slot, const void *data, size_t len);
  // Forgets r: before its ring is torn down.
  void Detach(FixedRing &r);

  // Registrations made and refused since the process started (tests).
  uint64_t registrations() const { return registrations_.load(); }
  uint64_t refusals() const { return refusals_.load(); }

 private:
  struct Slot {
    std::atomic<uintptr_t> base{0};
    std::atomic<size_t> size{0};
    std::atomic<uint32_t> gen{0};  // 0: free
  };
  FixedBuffers();
  bool AttachLocked(FixedRing &r);
  bool RegisterLocked(FixedRing &r, int slot);
  void RefuseLocked(FixedRing &r, const char *what, int err);
  static void ChildAfterFork();

  std::mutex mu_;
  std::array<Slot, kCapacity> slots_;
  std::vector<FixedRing *> rings_;  // attached rings; guarded by mu_
  uint32_t next_gen_ = 0;           // guarded by mu_
  std::atomic<uint64_t> registrations_{0};
  std::atomic<uint64_t> refusals_{0};
  bool refusal_logged_ = false;  // guarded by mu_
};

}  // namespace ufile
