// SPDX-License-Identifier: Apache-2.0
// The host-driven GPU search (gpu-hostio): the host reads, the GPU expands,
// so it differs from gpu-devio only in who issues the reads. Per level the
// GPU sorts the frontier and hands it over (bfs_hostio_gpu.h); a pool of
// workers, made once, takes chunks of it in turn. A worker plans its chunk
// as it goes (the lists of consecutive vertices in one request across gaps
// up to merge_gap_bytes, a list longer than a buffer in pieces), reads each
// request with cuFileRead straight into its device buffer, and when the
// buffer is full has the GPU expand it (index copied asynchronously, the
// worker's own stream) while it fills its other buffer. So planning,
// reading and expanding overlap, across workers and within each. The row
// offsets stay in host memory, where the host plans.
//
// A HostDrivenBfs is for one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bfs_file.h"
#include "bfs_hostio_gpu.h"

namespace g500 {

struct HostioOptions {
  unsigned threads = 0;               // workers; 0: every hardware thread
  uint64_t merge_gap_bytes = 32768;   // one request reads across gaps up to this
  uint64_t buffer_bytes = 16u << 20;  // each of a worker's two device buffers
  uint64_t index_entries = 1u << 18;  // the most list pieces of one batch
  uint32_t chunk_vertices = 1024;     // frontier vertices a worker takes at once
};

class HostDrivenBfs {
 public:
  // gpu: from OpenHostioGpu(nv, Workers(o), o.buffer_bytes / 4, o.index_entries).
  HostDrivenBfs(const GraphFile &f, gpu::HostioGpu *gpu, const HostioOptions &o);
  ~HostDrivenBfs();
  static unsigned Workers(const HostioOptions &o) { return Threads(o.threads); }
  // One search; the tree stays on the GPU (HostioParents). Stats accumulate.
  // Fails with the first read or CUDA error; -EINVAL for a bad root or options.
  Status Run(uint64_t root, FileBfsStats *stats);

 private:
  struct Level;
  const GraphFile &f_;
  gpu::HostioGpu *gpu_;
  const HostioOptions o_;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace g500
