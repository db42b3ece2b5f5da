// SPDX-License-Identifier: Apache-2.0
#include <cufile.h>

#include <cerrno>
#include <string>
#include <vector>

#include "bfs_gpu_common.cuh"
#include "bfs_hostio_gpu.h"

namespace g500::gpu {
namespace {

using namespace detail;  // NOLINT: the searches' shared pieces

// A warp a batch entry: claims every vertex of its list (or piece).
__global__ void ExpandBatch(const uint32_t *buf, const uint32_t *vertex, const uint32_t *pos,
                            const uint32_t *len, ull n, uint64_t nv, ull *parent, uint32_t *next,
                            ull *nnext) {
  const ull tid = blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x;
  const ull nwarps = gridDim.x * static_cast<ull>(blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  for (ull k = tid / 32; k < n; k += nwarps) {
    const uint32_t *src = buf + pos[k];
    const uint32_t u = vertex[k], m = len[k];
    for (uint32_t j = lane; j < m; j += 32) ClaimVertex(src[j], u, nv, parent, next, nnext);
  }
}

struct Slot {
  uint32_t *buf = nullptr;                                        // device
  uint32_t *dvertex = nullptr, *dpos = nullptr, *dlen = nullptr;  // device copy of the index
  uint32_t *vertex = nullptr, *pos = nullptr, *len = nullptr;     // pinned host
  bool registered = false;
  cudaEvent_t done = nullptr;
  bool pending = false;
};

struct Worker {
  cudaStream_t stream = nullptr;
  Slot slot[2];
};

}  // namespace

struct HostioGpu {
  uint64_t nv = 0, buffer_entries = 0, index_entries = 0;
  int key_bits = 0;
  void *sort_tmp = nullptr;
  size_t sort_bytes = 0;
  BfsArrays s;
  std::vector<Worker> workers;
  uint32_t *frontier = nullptr;  // pinned host memory
};

namespace {

int OpenSlot(HostioGpu *g, Slot &s, std::string *err) {
  const uint64_t ie = g->index_entries;
  G500_CUDA(cudaMalloc(&s.buf, g->buffer_entries * 4), "cudaMalloc list buffer");
  G500_CUDA(cudaMalloc(&s.dvertex, ie * 4), "cudaMalloc batch index");
  G500_CUDA(cudaMalloc(&s.dpos, ie * 4), "cudaMalloc batch index");
  G500_CUDA(cudaMalloc(&s.dlen, ie * 4), "cudaMalloc batch index");
  G500_CUDA(cudaMallocHost(&s.vertex, ie * 4), "cudaMallocHost batch index");
  G500_CUDA(cudaMallocHost(&s.pos, ie * 4), "cudaMallocHost batch index");
  G500_CUDA(cudaMallocHost(&s.len, ie * 4), "cudaMallocHost batch index");
  G500_CUDA(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming | cudaEventBlockingSync),
            "cudaEventCreate");
  const CUfileError_t e = cuFileBufRegister(s.buf, g->buffer_entries * 4, 0);
  if (e.err != CU_FILE_SUCCESS)
    return *err = std::string("cuFileBufRegister: ") + cufileop_status_error(e.err), -EIO;
  s.registered = true;
  return 0;
}

void CloseSlot(Slot &s) {
  if (s.registered) cuFileBufDeregister(s.buf);
  cudaFree(s.buf);
  cudaFree(s.dvertex);
  cudaFree(s.dpos);
  cudaFree(s.dlen);
  cudaFreeHost(s.vertex);
  cudaFreeHost(s.pos);
  cudaFreeHost(s.len);
  if (s.done != nullptr) cudaEventDestroy(s.done);
}

}  // namespace

int OpenHostioGpu(uint64_t nv, unsigned workers, uint64_t buffer_entries, uint64_t index_entries,
                  HostioGpu **out, std::string *err) {
  *out = nullptr;
  if (workers == 0 || buffer_entries == 0 || index_entries == 0)
    return *err = "workers, buffer and index entries must be positive", -EINVAL;
  if (buffer_entries > 0xffffffffu) return *err = "a buffer holds at most 2^32 entries", -EINVAL;
  if (nv > 0x7fffffffu) return *err = "more vertices than the frontier sort takes", -EINVAL;
  PreferBlockingSync();
  auto *g = new HostioGpu;
  *out = g;
  g->nv = nv;
  g->buffer_entries = buffer_entries;
  g->index_entries = index_entries;
  int rc = SortSpace(nv, &g->key_bits, &g->sort_bytes, err);
  if (rc != 0) return rc;
  const uint64_t slots = uint64_t{workers} * 2 * (buffer_entries * 4 + index_entries * 12);
  if ((rc = FitsInGpu(nv * 16 + g->sort_bytes + slots, "search arrays and list buffers", err)) != 0)
    return rc;
  G500_CUDA(cudaMalloc(&g->sort_tmp, g->sort_bytes), "cudaMalloc sort space");
  if ((rc = AllocArrays(&g->s, nv, err)) != 0) return rc;
  G500_CUDA(cudaMallocHost(&g->frontier, nv * 4), "cudaMallocHost frontier");
  g->workers.resize(workers);
  for (Worker &w : g->workers) {
    G500_CUDA(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (Slot &s : w.slot)
      if ((rc = OpenSlot(g, s, err)) != 0) return rc;
  }
  return 0;
}

HostioSlot HostioSlotOf(HostioGpu *g, unsigned worker, int slot) {
  const Slot &s = g->workers[worker].slot[slot];
  return {s.buf, s.vertex, s.pos, s.len};
}

int HostioStart(HostioGpu *g, uint64_t root, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  for (Worker &w : g->workers) w.slot[0].pending = w.slot[1].pending = false;
  return StartSearch(&g->s, g->nv, root, err);
}

int HostioFrontier(HostioGpu *g, uint64_t ncur, const uint32_t **v, std::string *err) {
  const int rc = SortCur(&g->s, g->sort_tmp, g->sort_bytes, g->key_bits, ncur, err);
  if (rc != 0) return rc;
  G500_CUDA(cudaMemcpy(g->frontier, g->s.cur, ncur * 4, cudaMemcpyDeviceToHost), "copy frontier");
  *v = g->frontier;
  return 0;
}

int HostioExpand(HostioGpu *g, unsigned worker, int slot, uint64_t n, std::string *err) {
  if (n == 0) return 0;
  if (n > g->index_entries) return *err = "batch larger than its index", -EINVAL;
  Worker &w = g->workers[worker];
  Slot &s = w.slot[slot];
  G500_CUDA(cudaMemcpyAsync(s.dvertex, s.vertex, n * 4, cudaMemcpyHostToDevice, w.stream),
            "copy batch index");
  G500_CUDA(cudaMemcpyAsync(s.dpos, s.pos, n * 4, cudaMemcpyHostToDevice, w.stream),
            "copy batch index");
  G500_CUDA(cudaMemcpyAsync(s.dlen, s.len, n * 4, cudaMemcpyHostToDevice, w.stream),
            "copy batch index");
  const ull blocks = (n * 32 + kBlock - 1) / kBlock;
  ExpandBatch<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock, 0, w.stream>>>(
      s.buf, s.dvertex, s.dpos, s.dlen, n, g->nv, g->s.parent, g->s.next, g->s.counters);
  G500_CUDA(cudaGetLastError(), "expand kernel launch");
  G500_CUDA(cudaEventRecord(s.done, w.stream), "cudaEventRecord");
  s.pending = true;
  return 0;
}

int HostioWait(HostioGpu *g, unsigned worker, int slot, std::string *err) {
  Slot &s = g->workers[worker].slot[slot];
  if (!s.pending) return 0;
  s.pending = false;
  G500_CUDA(cudaEventSynchronize(s.done), "expanding a batch");
  return 0;
}

int HostioEndLevel(HostioGpu *g, uint64_t *ncur, std::string *err) {
  ull n = 0;
  long long error = 0;
  const int rc = EndLevel(&g->s, &n, &error, err);  // synchronises every stream
  for (Worker &w : g->workers) w.slot[0].pending = w.slot[1].pending = false;
  *ncur = n;
  return rc;
}

int HostioParents(HostioGpu *g, int64_t *parent, std::string *err) {
  return CopyParents(&g->s, g->nv, parent, err);
}

void CloseHostioGpu(HostioGpu *g) {
  if (g == nullptr) return;
  for (Worker &w : g->workers) {
    for (Slot &s : w.slot) CloseSlot(s);
    if (w.stream != nullptr) cudaStreamDestroy(w.stream);
  }
  cudaFree(g->sort_tmp);
  cudaFreeHost(g->frontier);
  FreeArrays(&g->s);
  delete g;
}

}  // namespace g500::gpu
