// SPDX-License-Identifier: Apache-2.0
#include "core/runtime.h"

#include <algorithm>
#include <thread>

#include "core/log.h"
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
                                           api.available ? &contexts_ : nullptr);
  engine_ = MakeEngine(*cfg_);
  workers_ = std::make_unique<WorkerPool>(io_threads_);
  UFILE_LOG_INFO("driver open: engine %s, %zu I/O threads, request parallelism %zu, GPU %s",
                 engine_->name(), io_threads_, parallelism_,
                 api.available ? "available" : api.why_unavailable.c_str());
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
