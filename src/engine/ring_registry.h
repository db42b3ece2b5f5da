// SPDX-License-Identifier: Apache-2.0
// What io_uring rings may register: long-lived host memory (the staging
// pool's buffers) as registered ("fixed") buffers, and the descriptors of
// registered file handles as registered files.
// - A transfer into or out of a registered buffer skips the kernel's pinning
//   and unpinning of its pages on every request: a third to a half of an
//   O_DIRECT read's CPU on the H100 machine.
// - A request on a registered file skips taking and dropping a reference to
//   the file, an atomic on a cache line that every thread reading the same
//   file shares. That costs at millions of requests a second on one file,
//   far more than ufile makes: off by default (Config::io_uring_fixed_files).
//
// Publish*() puts a resource in a slot under a new generation (a file's slot
// is its descriptor's number). Each thread's ring holds one sparse table per
// kind and registers a slot the first time a transfer uses it (*Ready /
// FileSlot), then keeps it. Withdraw*() clears the slot from every ring
// before it returns, so the memory may then be freed, or the descriptor
// closed, and the address or number reused, without any ring reaching the
// old pages or file. A request in flight holds its own reference, so
// clearing never races a transfer.
//
// Registering buffers pins pages and, without CAP_IPC_LOCK, is charged to
// the user's RLIMIT_MEMLOCK once per ring. A ring whose table or a
// registration is refused goes on without that kind from then on (logged
// once per process and kind): correct, with the per-request costs back.
//
// Thread-safety: every member may be called from any thread. A
// RegisteredRing is used by its owner thread, except that Withdraw*()
// updates it (under the registry's lock, through the kernel, which
// serialises with the owner's use).
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

// One kind of registration on one ring.
struct RingTable {
  bool attached = false;             // has its sparse table; set by the owner
  std::atomic<bool> refused{false};  // goes on without this kind
  // Generation of what each slot holds on this ring; 0: nothing.
  std::unique_ptr<std::atomic<uint32_t>[]> gen;
};

// One ring's view of the registry.
struct RegisteredRing {
  io_uring *ring = nullptr;
  RingTable tables[2];  // by RingRegistry::Kind
  bool listed = false;  // in the registry's list; guarded by its lock
};

class RingRegistry {
 public:
  enum Kind { kBuffers = 0, kFiles = 1 };
  static constexpr unsigned kBufferSlots = 1024;
  static constexpr unsigned kMaxFileSlots = 4096;  // descriptors 0..4095

  static RingRegistry &Get();

  // Publishes [data, data + size): its slot, or kNoFixedSlot when the table
  // is full or size is 0 or over io_uring's 1 GiB limit.
  int PublishBuffer(void *data, size_t size);
  // Publishes descriptor fd: the publication's generation, for
  // WithdrawFile; 0 when fd's number is past the table.
  uint32_t PublishFile(int fd);
  // Withdraws a buffer's slot (kNoFixedSlot: nothing), or descriptor fd if
  // gen still names its publication; every ring has dropped it when this
  // returns.
  void WithdrawBuffer(int slot);
  void WithdrawFile(int fd, uint32_t gen);

  // Whether ring r may move [data, data + len) through slot as a registered
  // buffer: attaches r's table and registers the slot on first use. False
  // sends the caller to an ordinary transfer.
  bool BufferReady(RegisteredRing &r, int slot, const void *data, size_t len);
  // Registers every buffer published now on ring r (driver open: see
  // core/runtime), as BufferReady would on first use.
  void ReadyAllBuffers(RegisteredRing &r);
  // The registered-file index ring r may use for fd, or kNoFixedSlot.
  int FileSlot(RegisteredRing &r, int fd);
  // Forgets r: before its ring is torn down.
  void Detach(RegisteredRing &r);

  unsigned file_slots() const { return file_slots_; }
  // Registrations made and refused since the process started (tests).
  uint64_t registrations(Kind k) const { return registrations_[k].load(); }
  uint64_t refusals(Kind k) const { return refusals_[k].load(); }

 private:
  struct Slot {
    std::atomic<uintptr_t> base{0};  // buffer address, or the descriptor
    std::atomic<size_t> size{0};     // buffer size
    std::atomic<uint32_t> gen{0};    // 0: free
  };
  RingRegistry();
  static void ChildAfterFork();
  Slot &SlotOf(Kind k, int slot) { return k == kBuffers ? buffers_[slot] : files_[slot]; }
  unsigned Capacity(Kind k) const { return k == kBuffers ? kBufferSlots : file_slots_; }
  uint32_t FillLocked(Slot &s, uintptr_t base, size_t size);
  // Clears slot if its generation is gen (0: any).
  void WithdrawSlot(Kind k, int slot, uint32_t gen);
  // Registers slot (of generation gen) on r, attaching r's table first.
  bool ReadySlow(RegisteredRing &r, Kind k, int slot, uint32_t gen);
  int Update(RegisteredRing &r, Kind k, int slot, bool fill);
  void RefuseLocked(RegisteredRing &r, Kind k, const char *what, int err);

  std::mutex mu_;
  std::array<Slot, kBufferSlots> buffers_;
  std::array<Slot, kMaxFileSlots> files_;
  unsigned file_slots_;                  // min(kMaxFileSlots, RLIMIT_NOFILE)
  std::vector<RegisteredRing *> rings_;  // guarded by mu_
  uint32_t next_gen_ = 0;                // guarded by mu_
  std::atomic<uint64_t> registrations_[2] = {};
  std::atomic<uint64_t> refusals_[2] = {};
  bool refusal_logged_[2] = {false, false};  // guarded by mu_
};

}  // namespace ufile
