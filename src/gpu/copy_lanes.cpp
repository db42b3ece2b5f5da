// SPDX-License-Identifier: Apache-2.0
#include "gpu/copy_lanes.h"

#include <atomic>

#include "core/log.h"
#include "gpu/cuda_api.h"

namespace ufile {
namespace {

void Destroy(const CopyLane &lane) {
  CudaApi &api = Cuda();
  ScopedContext scope(lane.ctx);
  for (CUevent ev : lane.done)
    if (ev) api.cuEventDestroy(ev);
  if (lane.stream) api.cuStreamDestroy(lane.stream);
}

Result<CopyLane> Create(CUcontext ctx) {
  CudaApi &api = Cuda();
  ScopedContext scope(ctx);
  CopyLane lane;
  lane.ctx = ctx;
  CUresult res = api.cuStreamCreate(&lane.stream, CU_STREAM_NON_BLOCKING);
  for (CUevent &ev : lane.done)
    if (res == CUDA_SUCCESS) res = api.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
  if (res != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("creating a copy stream failed: %s", CudaErrorString(res).c_str());
    Destroy(lane);
    return Status::Cuda(res);
  }
  return lane;
}

}  // namespace

LaneLease &LaneLease::operator=(LaneLease &&other) noexcept {
  if (this != &other) {
    if (owner_) owner_->Return(lane_);
    owner_ = other.owner_;
    lane_ = other.lane_;
    other.owner_ = nullptr;
  }
  return *this;
}

LaneLease::~LaneLease() {
  if (owner_) owner_->Return(lane_);
}

CopyLanes::Slot &CopyLanes::MySlot() {
  static std::atomic<size_t> next{0};
  thread_local const size_t index = next.fetch_add(1) % kSlots;
  return slots_[index];
}

Result<LaneLease> CopyLanes::Lease(CUcontext ctx) {
  {
    Slot &slot = MySlot();
    std::lock_guard<std::mutex> lock(slot.mu);
    if (slot.lane && slot.lane->ctx == ctx) {
      CopyLane lane = *slot.lane;
      slot.lane.reset();
      return LaneLease(this, lane);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].ctx != ctx) continue;
      CopyLane lane = idle_[i];
      idle_[i] = idle_.back();
      idle_.pop_back();
      return LaneLease(this, lane);
    }
  }
  Result<CopyLane> lane = Create(ctx);
  if (!lane.ok()) return lane.status();
  return LaneLease(this, *lane);
}

void CopyLanes::Return(const CopyLane &lane) {
  {
    Slot &slot = MySlot();
    std::lock_guard<std::mutex> lock(slot.mu);
    if (!slot.lane) {
      slot.lane = lane;
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(lane);
}

void CopyLanes::ReleaseAll() {
  for (Slot &slot : slots_) {
    std::lock_guard<std::mutex> lock(slot.mu);
    if (slot.lane) Destroy(*slot.lane);
    slot.lane.reset();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const CopyLane &lane : idle_) Destroy(lane);
  idle_.clear();
}

}  // namespace ufile
