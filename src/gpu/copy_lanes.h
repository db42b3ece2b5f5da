// SPDX-License-Identifier: Apache-2.0
// Copy lanes: a non-blocking CUDA stream and its events, created once per
// context and reused. A request's participant leases one lane for the
// request; its copies overlap its next file reads (double buffering).
// Gather() moves a list of ranges in one GPU operation: a small copy kernel
// (PTX text, JIT-compiled by the driver once per context) that reads and
// writes device memory and mapped pinned host memory alike, so a batch of
// small I/Os costs one launch instead of one copy each.
// Each thread first looks in its own slot (one lane, an uncontended lock),
// so many threads doing small I/O do not queue on one mutex; then in the
// shared list, then in the other slots, and creates a lane only when none
// is idle, so the number of lanes is the most ever leased at once. Every
// lane, in a slot or not, stays reachable for ReleaseAll.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "base/status.h"

namespace ufile {

class CopyLanes;

// One range for Gather(): device-visible addresses (device memory, or the
// device address of mapped pinned host memory), any alignment.
struct GatherRange {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t len = 0;
};
static_assert(sizeof(GatherRange) == 24, "the kernel reads 24-byte descriptors");

// Events per lane: one per staging buffer a participant cycles through (two
// for double buffering, up to all of them for a pipelined read's ring).
constexpr int kLaneEvents = 8;

struct CopyLane {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  // Spinning events: cuEventSynchronize spins, cuEventQuery polls
  // (gpu/copy_wait.h).
  CUevent done[kLaneEvents] = {};
};

class LaneLease {
 public:
  LaneLease() = default;
  LaneLease(CopyLanes *owner, CopyLane lane) : owner_(owner), lane_(lane) {}
  LaneLease(LaneLease &&other) noexcept { *this = std::move(other); }
  LaneLease &operator=(LaneLease &&other) noexcept;
  ~LaneLease();
  const CopyLane &operator*() const { return lane_; }
  const CopyLane *operator->() const { return &lane_; }

 private:
  CopyLanes *owner_ = nullptr;
  CopyLane lane_;
};

class CopyLanes {
 public:
  CopyLanes() = default;
  ~CopyLanes() { ReleaseAll(); }
  CopyLanes(const CopyLanes &) = delete;
  CopyLanes &operator=(const CopyLanes &) = delete;

  Result<LaneLease> Lease(CUcontext ctx);
  // Lanes created in ctx so far (idle or leased).
  size_t created(CUcontext ctx) const;
  void Return(const CopyLane &lane);
  // Destroys every idle lane and unloads the gather kernels (driver close,
  // after all I/O has drained).
  void ReleaseAll();

  // Enqueues the copy of ranges[0, n) on lane's stream, in lane's context
  // (current on the calling thread). ranges is host memory that stays valid
  // until the stream has passed the copy; ranges_dev is its device address
  // when it is mapped pinned memory (0 if not). With the kernel (and
  // ranges_dev), one launch; otherwise one cuMemcpyAsync per range.
  CUresult Gather(const CopyLane &lane, const GatherRange *ranges, uint64_t ranges_dev, size_t n);

 private:
  struct Slot {
    std::mutex mu;
    std::optional<CopyLane> lane;  // guarded by mu
  };
  static constexpr size_t kSlots = 64;
  Slot &MySlot();

  struct Kernel {
    CUcontext ctx = nullptr;
    CUmodule mod = nullptr;  // null: loading failed in ctx (not retried)
    CUfunction fn = nullptr;
  };
  CUfunction KernelFor(CUcontext ctx);

  std::array<Slot, kSlots> slots_;
  mutable std::mutex mu_;
  std::vector<CopyLane> idle_;   // guarded by mu_
  std::vector<Kernel> kernels_;  // guarded by mu_
  std::vector<std::pair<CUcontext, size_t>> created_;  // guarded by mu_
};

}  // namespace ufile
