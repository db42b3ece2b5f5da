// SPDX-License-Identifier: Apache-2.0
// Level control and driver sessions. The counting hooks are in record.cpp.
#include "stats/stats.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "base/config.h"
#include "base/log.h"
#include "core/driver.h"
#include "core/runtime.h"
#include "gpu/cuda_api.h"
#include "observe/observer.h"
#include "stats/internal.h"
#include "stats/publish.h"

namespace ufile::stats {

std::atomic<Segment *> g_segment{nullptr};  // set once, never unmapped (see publish.h)

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

struct Control {
  int level = 0;
  bool running = true;                  // false after cuFileStatsStop
  bool nvtx = false;                    // profile.nvtx of the session
  bool api_level = false;               // cuFileSetStatsLevel was called: config no longer decides
  std::weak_ptr<const Config> session;  // the Config last applied
};

std::mutex g_mu;
Control g_ctl;  // guarded by g_mu

// Around fork(), so a child finds both stats locks free and what they guard
// consistent: the control lock first, then the registrations' (the order in
// which SyncConfig takes them). Registered when the library loads: the
// control lock is taken before any segment exists.
void LockForFork() {
  g_mu.lock();
  LockRegistrationsForFork();
}
void UnlockAfterFork() {
  UnlockRegistrationsAfterFork();
  g_mu.unlock();
}
void ChildAfterFork() {
  UnlockRegistrationsAfterFork();
  if (Segment *seg = g_segment.load(kRelaxed)) {
    DetachAfterFork(seg);
    seg->header.level.store(static_cast<uint32_t>(g_ctl.level), kRelaxed);
    seg->header.running.store(g_ctl.running ? 1 : 0, kRelaxed);
  }
  g_ctl.session.reset();
  g_mu.unlock();
}
const int g_fork_handlers = pthread_atfork(LockForFork, UnlockAfterFork, ChildAfterFork);

// REQUIRES: g_mu. The segment exists once any level above 0 was set.
Segment *SegmentLocked() {
  Segment *seg = g_segment.load(kRelaxed);
  if (!seg) {
    seg = CreateSegment();
    if (!seg) return nullptr;
    g_segment.store(seg, std::memory_order_release);
  }
  return seg;
}

// REQUIRES: g_mu. Makes g_state, the segment header and its publication
// follow g_ctl.
void ApplyLocked() {
  int level = g_ctl.level;
  Segment *seg = level > 0 ? SegmentLocked() : g_segment.load(kRelaxed);
  if (!seg) level = 0;  // no memory for counters: stay off
  if (seg) {
    seg->header.level.store(static_cast<uint32_t>(level), kRelaxed);
    seg->header.running.store(g_ctl.running ? 1 : 0, kRelaxed);
    if (level > 0)
      Publish(seg);
    else
      Unpublish();
  }
  const unsigned collect = g_ctl.running ? static_cast<unsigned>(level) : 0;
  observe::g_state.store(collect | (g_ctl.nvtx ? kNvtxBit : 0), std::memory_order_release);
}

// Fills num_gpus and the UUIDs of the GPUs CUDA reports (once each).
void FillGpuIdentity(Segment *seg) {
  CudaApi &api = Cuda();
  if (!api.available) return;
  const int n = std::min(api.device_count, kMaxGpus);
  seg->header.num_gpus.store(static_cast<uint32_t>(n), kRelaxed);
  for (int d = 0; d < n; ++d) {
    if (seg->header.uuid_set[d].load(std::memory_order_acquire)) continue;
    CUdevice dev;
    CUuuid uuid;
    if (api.cuDeviceGet(&dev, d) != CUDA_SUCCESS || api.cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS)
      continue;
    std::memcpy(seg->header.uuid[d], uuid.bytes, sizeof uuid.bytes);
    seg->header.uuid_set[d].store(1, std::memory_order_release);
  }
}

void SyncConfig(const std::shared_ptr<const Config> &cfg) {
  if (!cfg) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_ctl.session.lock() == cfg) return;
  g_ctl.session = cfg;
  ForgetRegistrations();
  g_ctl.nvtx = cfg->nvtx;
  if (!g_ctl.api_level) g_ctl.level = static_cast<int>(std::min<size_t>(cfg->stats_level, 3));
  ApplyLocked();
  if (g_ctl.level > 0)
    UFILE_LOG_INFO("stats: level %d, NVTX %s", g_ctl.level, g_ctl.nvtx ? "on" : "off");
}

void OnDriverClose() {
  std::lock_guard<std::mutex> lock(g_mu);
  Unpublish();
  g_ctl.session.reset();
}

// Installed before main (static initialization of the library), so every
// session and request is seen.
const observe::Observer kObserver{SyncConfig, OnDriverClose, RecordIo};
const bool g_observing = (observe::Install(&kObserver), true);

// The stats API may run before the first registration of a session.
void SyncWithDriver() {
  SyncConfig(Driver::Get().RunningConfig());
}

}  // namespace

Segment *CurrentSegment() {
  return g_segment.load(std::memory_order_acquire);
}

void SetLevel(int level) {
  SyncWithDriver();
  std::lock_guard<std::mutex> lock(g_mu);
  g_ctl.level = level;
  g_ctl.api_level = true;
  ApplyLocked();
}

int GetLevel() {
  SyncWithDriver();
  std::lock_guard<std::mutex> lock(g_mu);
  return g_ctl.level;
}

Status Start() {
  SyncWithDriver();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_ctl.level == 0) return Status::Op(CU_FILE_INVALID_VALUE);
  g_ctl.running = true;
  ApplyLocked();
  return Status::Ok();
}

void Stop() {
  SyncWithDriver();
  std::lock_guard<std::mutex> lock(g_mu);
  g_ctl.running = false;
  ApplyLocked();
}

void Reset() {
  SyncWithDriver();
  std::lock_guard<std::mutex> lock(g_mu);
  if (Segment *seg = g_segment.load(kRelaxed)) ZeroCounters(seg);
}

Status Snapshot(int want, Totals *out) {
  SyncWithDriver();
  std::lock_guard<std::mutex> lock(g_mu);
  Segment *seg = g_segment.load(kRelaxed);
  if (g_ctl.level < want || !seg) return Status::Op(CU_FILE_INVALID_VALUE);
  if (want >= 3) FillGpuIdentity(seg);
  *out = Sum(*seg);
  return Status::Ok();
}

void OnSession(Runtime &rt) {
  SyncConfig(rt.shared_config());
  if (CollectLevel() >= 3) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (Segment *seg = g_segment.load(kRelaxed)) FillGpuIdentity(seg);
  }
}


}  // namespace ufile::stats
