// SPDX-License-Identifier: Apache-2.0
// Runtime: the state of one open driver session (see core/driver.h). Built
// from the effective Config at open; its destructor tears down in order:
// worker threads, engine, copy lanes, staging buffers, GPU contexts.
// Thread-safety: accessors may be called from any thread; the objects they
// return are thread-safe themselves.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "base/config.h"
#include "core/buffer_registry.h"
#include "core/file_handle.h"
#include "engine/engine.h"
#include "engine/worker_pool.h"
#include "gpu/copy_lanes.h"
#include "gpu/memory.h"
#include "gpu/pinned_budget.h"
#include "gpu/staging_pool.h"

namespace ufile {

// Properties changeable while open (cuFileDriverSet*), in KiB.
struct LiveProps {
  std::atomic<bool> poll_mode{false};
  std::atomic<size_t> poll_threshold_kb{4};
  std::atomic<size_t> max_direct_io_kb{16384};
  std::atomic<size_t> max_cache_kb{131072};
  std::atomic<size_t> max_pinned_kb{33554432};
};

class Runtime {
 public:
  explicit Runtime(std::shared_ptr<const Config> cfg);
  ~Runtime();
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  const Config &config() const { return *cfg_; }
  std::shared_ptr<const Config> shared_config() const { return cfg_; }
  HandleTable &handles() { return handles_; }
  BufferRegistry &buffers() { return buffers_; }
  WorkerPool &workers() { return *workers_; }
  Engine &engine() { return *engine_; }
  StagingPool &staging() { return *staging_; }
  CopyLanes &lanes() { return lanes_; }
  PrimaryContexts &contexts() { return contexts_; }
  LiveProps &props() { return props_; }
  PinnedBudget &pinned() { return pinned_; }

  size_t io_threads() const { return io_threads_; }
  size_t request_parallelism() const { return parallelism_; }
  // Requests smaller than this run on the calling thread alone.
  size_t min_split_bytes() const { return cfg_->min_io_threshold_size_kb * 1024; }
  // Requests of min_split_bytes or more running now (core/transfer).
  std::atomic<size_t> &split_requests() { return split_requests_; }

 private:
  void Prepare();

  std::shared_ptr<const Config> cfg_;
  size_t io_threads_ = 1;
  size_t parallelism_ = 1;
  std::atomic<size_t> split_requests_{0};
  LiveProps props_;
  // Bounds staging_ and buffers_ (props_.max_pinned_kb); outlives both.
  PinnedBudget pinned_{props_.max_pinned_kb};
  PrimaryContexts contexts_;
  CopyLanes lanes_;
  HandleTable handles_;
  BufferRegistry buffers_{&pinned_};
  std::unique_ptr<StagingPool> staging_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<WorkerPool> workers_;
};

}  // namespace ufile
