// SPDX-License-Identifier: Apache-2.0
#include "core/runtime.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "base/log.h"
#include "gpu/cuda_api.h"

namespace ufile {
namespace {

// Defaults sized from the machine: one I/O thread per core, up to 16 (the
// page cache stops scaling past that on the machines measured).
size_t AutoThreads() {
  size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::min<size_t>(cores, 16);
}

}  // namespace

Runtime::Runtime(std::shared_ptr<const Config> cfg) : cfg_(std::move(cfg)) {
  io_threads_ = cfg_->max_io_threads ? cfg_->max_io_threads : AutoThreads();
  parallelism_ = cfg_->max_request_parallelism ? cfg_->max_request_parallelism : io_threads_;
  if (!cfg_->parallel_io) parallelism_ = 1;
  props_.poll_mode = cfg_->use_poll_mode;
  props_.poll_threshold_kb = cfg_->poll_mode_max_size_kb;
  props_.max_direct_io_kb = cfg_->max_direct_io_size_kb;
  props_.max_cache_kb = cfg_->max_device_cache_size_kb;
  props_.max_pinned_kb = cfg_->max_device_pinned_mem_size_kb;
  CudaApi &api = Cuda();
  staging_ = std::make_unique<StagingPool>(cfg_->posix_pool_slab_size_kb,
                                           cfg_->posix_pool_slab_count,
                                           api.available ? &contexts_ : nullptr, &pinned_);
  engine_ = MakeEngine(*cfg_);
  workers_ = std::make_unique<WorkerPool>(io_threads_);
  UFILE_LOG_INFO("driver open: engine %s, %zu I/O threads, request parallelism %zu, GPU %s",
                 engine_->name(), io_threads_, parallelism_,
                 api.available ? "available" : api.why_unavailable.c_str());
  if (cfg_->prepare_at_open) Prepare();
}

// A process's first large GPU read used to pin staging buffers, create copy
// streams and io_uring rings, and register the buffers with each ring, all
// on its own critical path: its first 256 MiB hot read ran at 0.17-0.46x its
// third (H100). Open does it instead, when a CUDA context is current (the
// application uses CUDA; ufile creates none for this): in that context, one
// buffer of the largest class and one lane per participant of a request (at
// most 16; pinning took about 3 ms per 4 MiB buffer there, however many
// threads asked at once); then every I/O thread, and this one, makes its
// ring and registers the buffers.
void Runtime::Prepare() {
  CudaApi &api = Cuda();
  CUcontext ctx = nullptr;
  if (!api.available || api.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) return;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t parts = std::min<size_t>(parallelism_, 16);
  const size_t made = staging_->Prefill(staging_->largest(), parts);
  std::vector<LaneLease> lanes;
  for (size_t i = 0; i < parts; ++i) {
    Result<LaneLease> l = lanes_.Lease(ctx);
    if (!l.ok()) break;
    lanes.push_back(std::move(*l));
  }
  workers_->OnEachThread([this] { engine_->PrepareThread(); });
  engine_->PrepareThread();
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - t0).count();
  UFILE_LOG_INFO("driver open: %zu staging buffers of %zu KiB, %zu copy lanes and the I/O "
                 "threads' rings ready in %.1f ms",
                 made, staging_->largest() >> 10, lanes.size(), ms);
}

Runtime::~Runtime() {
  workers_.reset();  // no I/O runs past this point
  engine_.reset();
  lanes_.ReleaseAll();
  staging_->Release();
  contexts_.ReleaseAll();
  UFILE_LOG_INFO("driver closed");
}

}  // namespace ufile
