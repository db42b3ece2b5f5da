// SPDX-License-Identifier: Apache-2.0
// What the GPU searches share (bfs_gpu.cu, bfs_devio.cu, bfs_hostio.cu): the
// error macro, the claim of a vertex, and the search's arrays (parents, two
// frontiers, counters) with their per-search and per-level steps. Every
// search leaves its tree in GPU memory, as the specification's output;
// CopyParents fetches it outside the timed search.
#pragma once

#include <cuda_runtime.h>

#include <cerrno>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <string>

namespace g500::gpu::detail {

using ull = unsigned long long;
constexpr ull kUnreached = ~0ull;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kBlock = 256;

inline int CudaFail(cudaError_t e, const char *what, std::string *err) {
  *err = std::string(what) + ": " + cudaGetErrorString(e);
  return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

#define G500_CUDA(call, what)                              \
  do {                                                     \
    const cudaError_t e_ = (call);                         \
    if (e_ != cudaSuccess) return CudaFail(e_, what, err); \
  } while (0)

// Claims w for parent u; appends it to the next frontier if it was unreached.
__device__ __forceinline__ void ClaimVertex(uint32_t w, uint32_t u, uint64_t nv, ull *parent,
                                            uint32_t *next, ull *nnext) {
  if (w >= nv || parent[w] != kUnreached) return;
  if (atomicCAS(&parent[w], kUnreached, static_cast<ull>(u)) == kUnreached)
    next[atomicAdd(nnext, 1ull)] = w;
}

// The host thread sleeps in cudaDeviceSynchronize instead of spinning, so
// the CPU cores measured are the I/O's. Best effort: a context made earlier
// (by libufile) keeps its flags.
inline void PreferBlockingSync() {
  (void)cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  (void)cudaGetLastError();
}

// Frontier arrays and the parent array, as every GPU search keeps them.
struct BfsArrays {
  ull *parent = nullptr, *counters = nullptr;  // nnext, bytes, error, cursor
  uint32_t *cur = nullptr, *next = nullptr;
};

inline int AllocArrays(BfsArrays *s, uint64_t nv, std::string *err) {
  G500_CUDA(cudaMalloc(&s->parent, nv * sizeof(ull)), "cudaMalloc parent");
  G500_CUDA(cudaMalloc(&s->cur, nv * sizeof(uint32_t)), "cudaMalloc frontier");
  G500_CUDA(cudaMalloc(&s->next, nv * sizeof(uint32_t)), "cudaMalloc frontier");
  G500_CUDA(cudaMalloc(&s->counters, 4 * sizeof(ull)), "cudaMalloc counters");
  return 0;
}

inline void FreeArrays(BfsArrays *s) {
  cudaFree(s->parent);
  cudaFree(s->cur);
  cudaFree(s->next);
  cudaFree(s->counters);
  *s = BfsArrays{};
}

inline int StartSearch(BfsArrays *s, uint64_t nv, uint64_t root, std::string *err) {
  const ull r = root;
  const uint32_t r32 = static_cast<uint32_t>(root);
  G500_CUDA(cudaMemset(s->parent, 0xff, nv * sizeof(ull)), "cudaMemset parent");
  G500_CUDA(cudaMemset(s->counters, 0, 4 * sizeof(ull)), "cudaMemset counters");
  G500_CUDA(cudaMemcpy(s->parent + root, &r, sizeof r, cudaMemcpyHostToDevice), "set root");
  G500_CUDA(cudaMemcpy(s->cur, &r32, sizeof r32, cudaMemcpyHostToDevice), "set frontier");
  return 0;
}

// After a level: the next frontier's size and the error word; swaps frontiers.
inline int EndLevel(BfsArrays *s, ull *ncur, long long *error, std::string *err) {
  G500_CUDA(cudaGetLastError(), "level kernel launch");
  G500_CUDA(cudaDeviceSynchronize(), "level kernel");
  ull c[4];
  G500_CUDA(cudaMemcpy(c, s->counters, sizeof c, cudaMemcpyDeviceToHost), "read counters");
  *ncur = c[0];
  *error = static_cast<long long>(c[2]);
  G500_CUDA(cudaMemset(s->counters, 0, sizeof(ull)), "reset frontier count");
  G500_CUDA(cudaMemset(s->counters + 3, 0, sizeof(ull)), "reset frontier cursor");
  uint32_t *t = s->cur;
  s->cur = s->next;
  s->next = t;
  return 0;
}

// The parent array of the last search, nv entries, into host memory.
inline int CopyParents(const BfsArrays *s, uint64_t nv, int64_t *parent, std::string *err) {
  G500_CUDA(cudaMemcpy(parent, s->parent, nv * sizeof(ull), cudaMemcpyDeviceToHost),
            "copy parents");
  return 0;
}

// 0 if need bytes (what) fit in the GPU's free memory (under a
// --gpu-memory-limit, what the limit leaves), else -ENOMEM with both sizes.
inline int FitsInGpu(uint64_t need, const char *what, std::string *err) {
  size_t free_b = 0, total_b = 0;
  G500_CUDA(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  if (need <= free_b) return 0;
  *err = std::string(what) + " need " + std::to_string(need) + " bytes of GPU memory, " +
         std::to_string(free_b) + " free";
  return -ENOMEM;
}

// The radix sort's key bits and scratch bytes for frontiers of up to nv vertices.
inline int SortSpace(uint64_t nv, int *key_bits, size_t *bytes, std::string *err) {
  *key_bits = 0;
  while (*key_bits < 32 && (uint64_t{1} << *key_bits) < nv) ++*key_bits;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr);
  G500_CUDA(
      cub::DeviceRadixSort::SortKeys(nullptr, *bytes, keys, static_cast<int>(nv), 0, *key_bits),
      "frontier sort size");
  return 0;
}

// Sorts the current frontier (ncur vertices) in place, next as scratch.
inline int SortCur(BfsArrays *s, void *tmp, size_t bytes, int key_bits, ull ncur,
                   std::string *err) {
  if (ncur < 2) return 0;
  cub::DoubleBuffer<uint32_t> keys(s->cur, s->next);
  G500_CUDA(cub::DeviceRadixSort::SortKeys(tmp, bytes, keys, static_cast<int>(ncur), 0, key_bits),
            "frontier sort");
  if (keys.Current() != s->cur) {
    s->next = s->cur;
    s->cur = keys.Current();
  }
  return 0;
}

}  // namespace g500::gpu::detail
