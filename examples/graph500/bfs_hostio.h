// SPDX-License-Identifier: Apache-2.0
// The host-driven search with the GPU expanding: the I/O is the host's, the
// rest the GPU's, so it differs from gpu-devio only in who issues the reads.
// Per level the GPU sorts the frontier and hands it over (bfs_hostio_gpu.h);
// the host cuts it into batches, each filling a device buffer with the lists
// of consecutive frontier vertices (one request across gaps up to
// merge_gap_bytes, a list longer than the buffer in pieces), has its threads
// read the batch's requests with cuFileRead straight into the buffer, and
// asks the GPU to expand it; the GPU expands one buffer while the host fills
// the other. The row offsets stay in host memory, where the host plans.
#pragma once

#include <cstdint>
#include <vector>

#include "bfs_file.h"
#include "bfs_hostio_gpu.h"

namespace g500 {

struct HostioOptions {
  unsigned threads = 0;                // readers; 0: every hardware thread
  uint64_t merge_gap_bytes = 4096;     // one request reads across gaps up to this
  uint64_t buffer_bytes = 256u << 20;  // each of the two device buffers
  uint64_t index_entries = 1u << 22;   // the most list pieces of one batch
};

// gpu: from OpenHostioGpu(nv, buffer_bytes / 4, index_entries). parent is
// resized to nv; stats accumulate. Fails with the first read or CUDA error.
Status HostioBfs(const GraphFile &f, gpu::HostioGpu *gpu, uint64_t root, const HostioOptions &o,
                 std::vector<int64_t> *parent, FileBfsStats *stats);

}  // namespace g500
