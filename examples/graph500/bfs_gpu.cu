// SPDX-License-Identifier: Apache-2.0
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bfs_gpu.h"
#include "bfs_gpu_common.cuh"

namespace g500::gpu {
namespace {

using namespace detail;  // NOLINT: the searches' shared pieces

// One level: a warp a frontier vertex. The lanes start at the 32-entry
// (128-byte) boundary below the list, so every warp load covers one aligned
// line: one PCIe request from pinned host memory (EMOGI's "aligned" access),
// whole sectors from device memory.
__global__ void InMemoryLevel(const ull *off, const uint32_t *cols, uint64_t nv,
                              const uint32_t *cur, ull ncur, ull *parent, uint32_t *next,
                              ull *nnext) {
  const ull tid = blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x;
  const ull nwarps = gridDim.x * static_cast<ull>(blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  for (ull i = tid / 32; i < ncur; i += nwarps) {
    const uint32_t u = cur[i];
    const ull s = off[u], e = off[u + 1];
    for (ull k = (s & ~31ull) + lane; k < e; k += 32)
      if (k >= s) ClaimVertex(cols[k], u, nv, parent, next, nnext);
  }
}

// Copies n bytes with every core: filling the pinned copy of the column
// indices is part of the graph's construction.
void ParallelCopy(void *dst, const void *src, uint64_t n) {
  const unsigned t =
      std::thread::hardware_concurrency() > 0 ? std::thread::hardware_concurrency() : 1;
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < t; k++)
    pool.emplace_back([=] {
      const uint64_t b = n * k / t, e = n * (k + 1) / t;
      std::memcpy(static_cast<char *>(dst) + b, static_cast<const char *>(src) + b, e - b);
    });
  for (auto &th : pool) th.join();
}

std::vector<void *> g_held;  // LimitGpuMemory's allocations

}  // namespace

struct MemGraph {
  ull *off = nullptr;
  uint32_t *cols = nullptr;  // device memory, or pinned host memory the GPU maps
  bool pinned = false;
  uint64_t nv = 0;
  // Zero-copy sorts each frontier, so that warps walk host memory in
  // address order, as EMOGI's scan of the vertices in order does.
  int key_bits = 0;
  void *sort_tmp = nullptr;
  size_t sort_bytes = 0;
  BfsArrays s;
};

int UploadGraph(const uint64_t *offsets, const uint32_t *cols, uint64_t nv, uint64_t ne,
                ColsIn where, MemGraph **out, std::string *err) {
  PreferBlockingSync();
  auto *g = new MemGraph;
  g->nv = nv;
  *out = g;
  const bool dev = where == ColsIn::kDevice;
  const uint64_t need = (nv + 1) * 8 + nv * 16 + (dev ? ne * 4 : 0);
  int rc = FitsInGpu(
      need, dev ? "the whole graph and search arrays" : "row offsets and search arrays", err);
  if (rc != 0) return rc;
  G500_CUDA(cudaMalloc(&g->off, (nv + 1) * sizeof(ull)), "cudaMalloc row offsets");
  G500_CUDA(cudaMemcpy(g->off, offsets, (nv + 1) * sizeof(ull), cudaMemcpyHostToDevice),
            "copy row offsets");
  if (dev) {
    G500_CUDA(cudaMalloc(&g->cols, ne * sizeof(uint32_t)), "cudaMalloc column indices");
    G500_CUDA(cudaMemcpy(g->cols, cols, ne * sizeof(uint32_t), cudaMemcpyHostToDevice),
              "copy column indices");
  } else {
    // Mapped pinned memory: with unified addressing the host pointer is the device's.
    G500_CUDA(cudaHostAlloc(&g->cols, ne * sizeof(uint32_t), cudaHostAllocMapped),
              "cudaHostAlloc column indices");
    g->pinned = true;
    ParallelCopy(g->cols, cols, ne * sizeof(uint32_t));
    if (nv > 0x7fffffffu) return *err = "more vertices than the frontier sort takes", -EINVAL;
    if ((rc = SortSpace(nv, &g->key_bits, &g->sort_bytes, err)) != 0) return rc;
    G500_CUDA(cudaMalloc(&g->sort_tmp, g->sort_bytes), "cudaMalloc sort space");
  }
  return AllocArrays(&g->s, nv, err);
}

int BfsInMemory(MemGraph *g, uint64_t root, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  int rc = StartSearch(&g->s, g->nv, root, err);
  ull ncur = 1;
  long long error = 0;
  while (rc == 0 && ncur > 0) {
    if (g->pinned && (rc = SortCur(&g->s, g->sort_tmp, g->sort_bytes, g->key_bits, ncur, err)) != 0)
      return rc;
    const ull blocks = (ncur * 32 + kBlock - 1) / kBlock;
    InMemoryLevel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock>>>(
        g->off, g->cols, g->nv, g->s.cur, ncur, g->s.parent, g->s.next, g->s.counters);
    rc = EndLevel(&g->s, &ncur, &error, err);
  }
  return rc;
}

int MemParents(MemGraph *g, int64_t *parent, std::string *err) {
  return CopyParents(&g->s, g->nv, parent, err);
}

void FreeGraph(MemGraph *g) {
  if (g == nullptr) return;
  cudaFree(g->off);
  if (g->pinned)
    cudaFreeHost(g->cols);
  else
    cudaFree(g->cols);
  cudaFree(g->sort_tmp);
  FreeArrays(&g->s);
  delete g;
}

int LimitGpuMemory(uint64_t bytes, uint64_t *held, std::string *err) {
  *held = 0;
  PreferBlockingSync();  // before the first call makes the context
  if (!g_held.empty()) return *err = "a GPU memory limit is already set", -EBUSY;
  // The allocator cannot hand out every free byte at once: what one
  // allocation cannot take, smaller ones do, down to 2 MiB pages.
  for (uint64_t piece = UINT64_MAX; piece >= (2u << 20);) {
    size_t free_b = 0, total_b = 0;
    G500_CUDA(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (free_b <= bytes) break;
    const uint64_t want = free_b - bytes < piece ? free_b - bytes : piece;
    void *p = nullptr;
    if (cudaMalloc(&p, want) != cudaSuccess) {
      (void)cudaGetLastError();
      piece = want / 2;
      continue;
    }
    g_held.push_back(p);
    *held += want;
  }
  return 0;
}

void ReleaseGpuMemoryLimit() {
  for (void *p : g_held) cudaFree(p);
  g_held.clear();
}

}  // namespace g500::gpu
