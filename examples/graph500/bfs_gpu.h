// SPDX-License-Identifier: Apache-2.0
// Breadth-first search on the GPU with the whole CSR where the GPU reads it
// directly (bfs_gpu.cu; built where nvcc is), and the GPU memory budget of
// every GPU search. Plain types only, so that the CUDA file needs no C++20
// header.
//
// The row offsets and the search's arrays are in device memory; the column
// indices either in device memory too (gpu-mem, the in-memory ceiling) or in
// pinned host memory that kernels read over PCIe (gpu-zerocopy, after
// EMOGI: a graph that sits in host memory, read without copying it first).
// One kernel serves both: a warp a frontier vertex, its lanes reading the
// list in 128-byte aligned lines, so each warp load is one PCIe request.
//
// Every call returns 0 or a negative errno and then sets *err. Upload sets
// *out even when it fails: release it with FreeGraph. A search leaves its
// tree in GPU memory (the specification's output); MemParents copies it out.
// Not for two threads at once.
#pragma once

#include <cstdint>
#include <string>

namespace g500::gpu {

enum class ColsIn { kDevice, kPinnedHost };

struct MemGraph;
// -ENOMEM (with the sizes) when what the search keeps in GPU memory does not
// fit in what is free (under LimitGpuMemory: in the limit).
int UploadGraph(const uint64_t *offsets, const uint32_t *cols, uint64_t nv, uint64_t ne,
                ColsIn where, MemGraph **out, std::string *err);
int BfsInMemory(MemGraph *g, uint64_t root, std::string *err);
// parent: nv entries; the root's is itself, an unreached vertex's -1.
int MemParents(MemGraph *g, int64_t *parent, std::string *err);
void FreeGraph(MemGraph *g);

// Leaves the searches at most `bytes` of the GPU's free memory by holding
// the rest in one allocation, until ReleaseGpuMemoryLimit. *held: the bytes
// held (0 if no more than `bytes` was free).
int LimitGpuMemory(uint64_t bytes, uint64_t *held, std::string *err);
void ReleaseGpuMemoryLimit();

}  // namespace g500::gpu
