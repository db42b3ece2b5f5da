// SPDX-License-Identifier: Apache-2.0
// Breadth-first search whose kernels read the graph file themselves
// (bfs_devio.cu, gpu-devio; built where nvcc is). Only the row offsets and
// the search's arrays are in GPU memory; the kernels read each frontier
// vertex's neighbour list from the file through ufile's device queues.
//
// Every call returns 0 or a negative errno and then sets *err. Open sets
// *out even when it fails: release it with CloseDevio. A search leaves its
// tree in GPU memory; DevioParents copies it out. Not for two threads at once.
#pragma once

#include <cufile.h>

#include <cstdint>
#include <string>

namespace g500::gpu {

struct DevioOptions {
  unsigned queues = 16;
  unsigned depth = 512;             // slots a queue
  uint64_t staging_bytes = 16384;   // the largest read a lane makes
  uint64_t merge_gap_bytes = 4096;  // one request reads across gaps up to this
  unsigned warps = 0;               // 0: queues * depth / 32 (one slot per lane)
  unsigned sq_threads = 0;          // 0: the library's default
};

struct DevioStats {
  uint64_t bytes_read = 0;
  uint32_t levels = 0;
  int path = 0;  // UFILE_DEVIO_PATH_NOCPU or _PROXY
};

struct DevioGraph;
// fh: the graph file's registered handle; offsets: nv + 1 row offsets;
// cols_off: the byte offset of the column indices in the file. -ENOMEM when
// the row offsets and the search's arrays do not fit in GPU memory.
int OpenDevio(CUfileHandle_t fh, const uint64_t *offsets, uint64_t nv, uint64_t cols_off,
              const DevioOptions &o, DevioGraph **out, std::string *err);
int BfsDevio(DevioGraph *g, uint64_t root, DevioStats *stats, std::string *err);
int DevioParents(DevioGraph *g, int64_t *parent, std::string *err);
void CloseDevio(DevioGraph *g);

}  // namespace g500::gpu
