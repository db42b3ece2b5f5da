// SPDX-License-Identifier: Apache-2.0
// Breadth-first search on the GPU (bfs_gpu.cu; built where nvcc is). Plain
// types only, so that the CUDA file needs no C++20 header.
//
// MemGraph: the whole CSR in device memory, the in-memory ceiling.
// DevioGraph: only the row offsets (and the search's arrays) in device
// memory; kernels read the frontier's neighbour lists from the graph file
// themselves, through ufile's device queues, into per-lane device buffers.
// Each level the frontier is sorted (CUB radix sort); warps take segments of
// it, and a warp's round is up to 32 requests (warp_submit_reads, one
// doorbell), each covering the lists of consecutive frontier vertices
// (across gaps up to merge_gap_bytes) or a piece of a long one. The host
// sorts and launches, once a level, and nothing else.
//
// Every call returns 0 or a negative errno and then sets *err. Upload and
// Open set *out even when they fail: release it with FreeGraph / CloseDevio.
// parent is a host array of nv entries: the root's is itself, an unreached
// vertex's -1. Neither object may be used by two threads at once.
#pragma once

#include <cufile.h>

#include <cstdint>
#include <string>

namespace g500::gpu {

struct MemGraph;
int UploadGraph(const uint64_t *offsets, const uint32_t *cols, uint64_t nv, uint64_t ne,
                MemGraph **out, std::string *err);
int BfsInMemory(MemGraph *g, uint64_t root, int64_t *parent, std::string *err);
void FreeGraph(MemGraph *g);

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
// cols_off: the byte offset of the column indices in the file.
// -ENOMEM when the row offsets and the search's arrays do not fit in GPU memory.
int OpenDevio(CUfileHandle_t fh, const uint64_t *offsets, uint64_t nv, uint64_t cols_off,
              const DevioOptions &o, DevioGraph **out, std::string *err);
int BfsDevio(DevioGraph *g, uint64_t root, int64_t *parent, DevioStats *stats, std::string *err);
void CloseDevio(DevioGraph *g);

}  // namespace g500::gpu
