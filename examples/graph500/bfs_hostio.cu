// SPDX-License-Identifier: Apache-2.0
#include <cufile.h>

#include <cerrno>
#include <string>

#include "bfs_gpu_search.cuh"
#include "bfs_hostio_gpu.h"

namespace g500::gpu {
namespace {

using namespace detail;  // NOLINT: the searches' shared pieces

// A warp a batch entry: claims every vertex of its list (or piece).
__global__ void ExpandBatch(const uint32_t *buf, const uint32_t *vertex, const uint64_t *pos,
                            const uint32_t *len, ull n, uint64_t nv, ull *parent, uint32_t *next,
                            ull *nnext) {
  const ull tid = blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x;
  const ull nwarps = gridDim.x * static_cast<ull>(blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  for (ull k = tid / 32; k < n; k += nwarps) {
    const uint32_t *src = buf + pos[k];
    const uint32_t u = vertex[k], m = len[k];
    for (uint32_t j = lane; j < m; j += 32) Visit(src[j], u, nv, parent, next, nnext);
  }
}

}  // namespace

struct HostioGpu {
  uint64_t nv = 0, buffer_entries = 0, index_entries = 0;
  int key_bits = 0;
  void *sort_tmp = nullptr;
  size_t sort_bytes = 0;
  Search s;
  uint32_t *buf[2] = {};
  bool registered[2] = {};
  uint32_t *vertex[2] = {}, *len[2] = {};
  uint64_t *pos[2] = {};
  cudaEvent_t done[2] = {};
  bool pending[2] = {};
  uint32_t *frontier = nullptr;  // pinned host memory
};

int OpenHostioGpu(uint64_t nv, uint64_t buffer_entries, uint64_t index_entries, HostioGpu **out,
                  std::string *err) {
  if (buffer_entries == 0 || index_entries == 0)
    return *err = "buffer and index entries must be positive", -EINVAL;
  if (nv > 0x7fffffffu) return *err = "more vertices than the frontier sort takes", -EINVAL;
  PreferBlockingSync();
  auto *g = new HostioGpu;
  *out = g;
  g->nv = nv;
  g->buffer_entries = buffer_entries;
  g->index_entries = index_entries;
  int rc = SortSpace(nv, &g->key_bits, &g->sort_bytes, err);
  if (rc != 0) return rc;
  const uint64_t need = nv * 16 + g->sort_bytes + 2 * (buffer_entries * 4 + index_entries * 16);
  if ((rc = FitsInGpu(need, "search arrays and list buffers", err)) != 0) return rc;
  G500_CUDA(cudaMalloc(&g->sort_tmp, g->sort_bytes), "cudaMalloc sort space");
  if ((rc = AllocSearch(&g->s, nv, err)) != 0) return rc;
  for (int k = 0; k < 2; k++) {
    G500_CUDA(cudaMalloc(&g->buf[k], buffer_entries * 4), "cudaMalloc list buffer");
    G500_CUDA(cudaMalloc(&g->vertex[k], index_entries * 4), "cudaMalloc batch index");
    G500_CUDA(cudaMalloc(&g->len[k], index_entries * 4), "cudaMalloc batch index");
    G500_CUDA(cudaMalloc(&g->pos[k], index_entries * 8), "cudaMalloc batch index");
    G500_CUDA(cudaEventCreateWithFlags(&g->done[k], cudaEventDisableTiming | cudaEventBlockingSync),
              "cudaEventCreate");
    const CUfileError_t e = cuFileBufRegister(g->buf[k], buffer_entries * 4, 0);
    if (e.err != CU_FILE_SUCCESS)
      return *err = std::string("cuFileBufRegister: ") + cufileop_status_error(e.err), -EIO;
    g->registered[k] = true;
  }
  G500_CUDA(cudaMallocHost(&g->frontier, nv * 4), "cudaMallocHost frontier");
  return 0;
}

uint32_t *HostioBuffer(HostioGpu *g, int slot) {
  return g->buf[slot];
}

int HostioStart(HostioGpu *g, uint64_t root, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  g->pending[0] = g->pending[1] = false;
  return StartSearch(&g->s, g->nv, root, err);
}

int HostioFrontier(HostioGpu *g, uint64_t ncur, const uint32_t **v, std::string *err) {
  const int rc = SortCur(&g->s, g->sort_tmp, g->sort_bytes, g->key_bits, ncur, err);
  if (rc != 0) return rc;
  G500_CUDA(cudaMemcpy(g->frontier, g->s.cur, ncur * 4, cudaMemcpyDeviceToHost), "copy frontier");
  *v = g->frontier;
  return 0;
}

int HostioWait(HostioGpu *g, int slot, std::string *err) {
  if (!g->pending[slot]) return 0;
  g->pending[slot] = false;
  G500_CUDA(cudaEventSynchronize(g->done[slot]), "expanding a batch");
  return 0;
}

int HostioExpand(HostioGpu *g, int slot, const HostioBatch &b, std::string *err) {
  if (b.n == 0) return 0;
  if (b.n > g->index_entries) return *err = "batch larger than its index", -EINVAL;
  G500_CUDA(cudaMemcpy(g->vertex[slot], b.vertex, b.n * 4, cudaMemcpyHostToDevice), "copy index");
  G500_CUDA(cudaMemcpy(g->len[slot], b.len, b.n * 4, cudaMemcpyHostToDevice), "copy index");
  G500_CUDA(cudaMemcpy(g->pos[slot], b.pos, b.n * 8, cudaMemcpyHostToDevice), "copy index");
  const ull blocks = (b.n * 32 + kBlock - 1) / kBlock;
  ExpandBatch<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock>>>(
      g->buf[slot], g->vertex[slot], g->pos[slot], g->len[slot], b.n, g->nv, g->s.parent, g->s.next,
      g->s.counters);
  G500_CUDA(cudaGetLastError(), "expand kernel launch");
  G500_CUDA(cudaEventRecord(g->done[slot], 0), "cudaEventRecord");
  g->pending[slot] = true;
  return 0;
}

int HostioEndLevel(HostioGpu *g, uint64_t *ncur, std::string *err) {
  ull n = 0;
  long long error = 0;
  const int rc = EndLevel(&g->s, &n, &error, err);
  g->pending[0] = g->pending[1] = false;
  *ncur = n;
  return rc;
}

int HostioParents(HostioGpu *g, int64_t *parent, std::string *err) {
  G500_CUDA(cudaMemcpy(parent, g->s.parent, g->nv * sizeof(ull), cudaMemcpyDeviceToHost),
            "copy parents");
  return 0;
}

void CloseHostioGpu(HostioGpu *g) {
  if (g == nullptr) return;
  for (int k = 0; k < 2; k++) {
    if (g->registered[k]) cuFileBufDeregister(g->buf[k]);
    cudaFree(g->buf[k]);
    cudaFree(g->vertex[k]);
    cudaFree(g->len[k]);
    cudaFree(g->pos[k]);
    if (g->done[k] != nullptr) cudaEventDestroy(g->done[k]);
  }
  cudaFree(g->sort_tmp);
  cudaFreeHost(g->frontier);
  FreeSearch(&g->s);
  delete g;
}

}  // namespace g500::gpu
