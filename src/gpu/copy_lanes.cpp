// SPDX-License-Identifier: Apache-2.0
#include "gpu/copy_lanes.h"

#include <algorithm>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "gpu/cuda_api.h"

namespace ufile {
namespace {

// ufile_gather(GatherRange *r, u32 n): block b copies r[b], r[b + grid], ...
// with its threads striding over the range, 16 bytes at a time when src,
// dst and len are 16-byte aligned, else 4, else 1. Generic loads and stores,
// so either side may be device or mapped host memory. PTX 7.0 / sm_52: the
// driver JIT-compiles it for whatever GPU runs it (checked with CUDA 13.0
// ptxas for sm_80 and sm_90).
//
// One strided loop of the kernel: bytes [rd9, rd6) of the range, step rd12,
// from src rd4 to dst rd5, one `type` value (in reg) at a time.
#define UFILE_GATHER_LOOP(label, type, reg) \
  label ":\n"                              \
  "  setp.ge.u64 %p3, %rd9, %rd6;\n"        \
  "  @%p3 bra NEXT;\n"                      \
  "  add.u64 %rd10, %rd4, %rd9;\n"          \
  "  ld." type " " reg ", [%rd10];\n"       \
  "  add.u64 %rd11, %rd5, %rd9;\n"          \
  "  st." type " [%rd11], " reg ";\n"       \
  "  add.u64 %rd9, %rd9, %rd12;\n"          \
  "  bra " label ";\n"

const char kGatherPtx[] = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry ufile_gather(.param .u64 p_desc, .param .u32 p_n)
{
  .reg .pred %p<4>;
  .reg .b16 %h<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<24>;
  ld.param.u64 %rd1, [p_desc];
  ld.param.u32 %r1, [p_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %nctaid.x;
  mov.u32 %r4, %tid.x;
  mov.u32 %r5, %ntid.x;
  cvt.u64.u32 %rd20, %r4;
  cvt.u64.u32 %rd21, %r5;
DESC:
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd2, %r2, 24;
  add.u64 %rd3, %rd1, %rd2;
  ld.u64 %rd4, [%rd3];
  ld.u64 %rd5, [%rd3+8];
  ld.u64 %rd6, [%rd3+16];
  or.b64 %rd7, %rd4, %rd5;
  or.b64 %rd7, %rd7, %rd6;
  and.b64 %rd8, %rd7, 15;
  setp.eq.u64 %p2, %rd8, 0;
  @%p2 bra V16;
  and.b64 %rd8, %rd7, 3;
  setp.eq.u64 %p2, %rd8, 0;
  @%p2 bra V4;
  mov.u64 %rd9, %rd20;
  mov.u64 %rd12, %rd21;
)" UFILE_GATHER_LOOP("B1", "u8", "%h1") R"(
V4:
  shl.b64 %rd9, %rd20, 2;
  shl.b64 %rd12, %rd21, 2;
)" UFILE_GATHER_LOOP("W1", "u32", "%r6") R"(
V16:
  shl.b64 %rd9, %rd20, 4;
  shl.b64 %rd12, %rd21, 4;
)" UFILE_GATHER_LOOP("Q1", "v4.u32", "{%r6, %r7, %r8, %r9}") R"(
NEXT:
  add.u32 %r2, %r2, %r3;
  bra DESC;
DONE:
  ret;
}
)";
#undef UFILE_GATHER_LOOP

constexpr unsigned kGatherThreads = 256;  // one 16-byte pass over 4 KiB
constexpr unsigned kGatherMaxBlocks = 4096;

// UFILE_GATHER=memcpy: one cuMemcpyAsync per range instead of the kernel
// (to compare the two; not needed otherwise).
bool KernelWanted() {
  static const bool wanted = [] {
    const char *v = std::getenv("UFILE_GATHER");
    return !(v && std::strcmp(v, "memcpy") == 0);
  }();
  return wanted;
}

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
  // A lane parked in another thread's slot (that thread may have exited):
  // reuse it rather than create a stream. Creating streams while stream
  // operations hold user streams was seen to deadlock in the CUDA driver
  // (docs/ASYNC.md), and lanes must not grow with every short-lived thread.
  for (Slot &slot : slots_) {
    std::lock_guard<std::mutex> lock(slot.mu);
    if (slot.lane && slot.lane->ctx == ctx) {
      CopyLane lane = *slot.lane;
      slot.lane.reset();
      return LaneLease(this, lane);
    }
  }
  Result<CopyLane> lane = Create(ctx);
  if (!lane.ok()) return lane.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(created_.begin(), created_.end(),
                           [&](const auto &e) { return e.first == ctx; });
    if (it == created_.end())
      created_.emplace_back(ctx, 1);
    else
      ++it->second;
  }
  return LaneLease(this, *lane);
}

size_t CopyLanes::created(CUcontext ctx) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto &e : created_)
    if (e.first == ctx) return e.second;
  return 0;
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

CUfunction CopyLanes::KernelFor(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Kernel &k : kernels_)
    if (k.ctx == ctx) return k.fn;
  Kernel k;
  k.ctx = ctx;
  CudaApi &api = Cuda();
  CUresult res = api.cuModuleLoadData(&k.mod, kGatherPtx);
  if (res == CUDA_SUCCESS) res = api.cuModuleGetFunction(&k.fn, k.mod, "ufile_gather");
  if (res != CUDA_SUCCESS) {
    UFILE_LOG_WARN("loading the gather kernel failed (%s); small batch entries are copied one "
                   "by one", CudaErrorString(res).c_str());
    if (k.mod) api.cuModuleUnload(k.mod);
    k.mod = nullptr;
    k.fn = nullptr;
  }
  kernels_.push_back(k);
  return k.fn;
}

CUresult CopyLanes::Gather(const CopyLane &lane, const GatherRange *ranges, uint64_t ranges_dev,
                           size_t n) {
  CudaApi &api = Cuda();
  if (n == 0) return CUDA_SUCCESS;
  CUfunction fn = ranges_dev && KernelWanted() ? KernelFor(lane.ctx) : nullptr;
  if (fn) {
    uint64_t desc = ranges_dev;
    auto count = static_cast<uint32_t>(n);
    void *args[] = {&desc, &count};
    const auto blocks = static_cast<unsigned>(std::min<size_t>(n, kGatherMaxBlocks));
    return api.cuLaunchKernel(fn, blocks, 1, 1, kGatherThreads, 1, 1, 0, lane.stream, args,
                              nullptr);
  }
  for (size_t i = 0; i < n; ++i) {
    CUresult res = api.cuMemcpyAsync(static_cast<CUdeviceptr>(ranges[i].dst),
                                     static_cast<CUdeviceptr>(ranges[i].src),
                                     static_cast<size_t>(ranges[i].len), lane.stream);
    if (res != CUDA_SUCCESS) return res;
  }
  return CUDA_SUCCESS;
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
  for (const Kernel &k : kernels_) {
    if (!k.mod) continue;
    ScopedContext scope(k.ctx);
    Cuda().cuModuleUnload(k.mod);
  }
  kernels_.clear();
  created_.clear();
}

}  // namespace ufile
