// SPDX-License-Identifier: Apache-2.0
// Copy lanes: a non-blocking CUDA stream and two events, created once per
// context and reused. A request's participant leases one lane for the
// request; its copies overlap its next file reads (double buffering).
// Each thread first looks in its own slot (one lane, an uncontended lock),
// so many threads doing small I/O do not queue on one mutex; every lane,
// in a slot or not, stays reachable for ReleaseAll.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <cuda.h>

#include <array>
#include <mutex>
#include <optional>
#include <vector>

#include "core/status.h"

namespace ufile {

class CopyLanes;

struct CopyLane {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent done[2] = {nullptr, nullptr};  // one per staging buffer
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
  void Return(const CopyLane &lane);
  // Destroys every idle lane (driver close, after all I/O has drained).
  void ReleaseAll();

 private:
  struct Slot {
    std::mutex mu;
    std::optional<CopyLane> lane;  // guarded by mu
  };
  static constexpr size_t kSlots = 64;
  Slot &MySlot();

  std::array<Slot, kSlots> slots_;
  std::mutex mu_;
  std::vector<CopyLane> idle_;  // guarded by mu_
};

}  // namespace ufile
