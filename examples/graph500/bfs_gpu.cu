// SPDX-License-Identifier: Apache-2.0
#include <ufile/device.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <ufile/device.cuh>

#include "bfs_gpu.h"

namespace g500::gpu {
namespace {

using ull = unsigned long long;
constexpr ull kUnreached = ~0ull;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kBlock = 256;

int CudaFail(cudaError_t e, const char *what, std::string *err) {
  *err = std::string(what) + ": " + cudaGetErrorString(e);
  return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

#define G500_CUDA(call, what)                              \
  do {                                                     \
    const cudaError_t e_ = (call);                         \
    if (e_ != cudaSuccess) return CudaFail(e_, what, err); \
  } while (0)

// Claims w for parent u; appends it to the next frontier if it was unreached.
__device__ __forceinline__ void Visit(uint32_t w, uint32_t u, uint64_t nv, ull *parent,
                                      uint32_t *next, ull *nnext) {
  if (w >= nv || parent[w] != kUnreached) return;
  if (atomicCAS(&parent[w], kUnreached, static_cast<ull>(u)) == kUnreached)
    next[atomicAdd(nnext, 1ull)] = w;
}

// One level over the CSR in device memory: a warp a frontier vertex.
__global__ void MemLevel(const ull *off, const uint32_t *cols, uint64_t nv, const uint32_t *cur,
                         ull ncur, ull *parent, uint32_t *next, ull *nnext) {
  const ull tid = blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x;
  const ull nwarps = gridDim.x * static_cast<ull>(blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  for (ull i = tid / 32; i < ncur; i += nwarps) {
    const uint32_t u = cur[i];
    for (ull k = off[u] + lane; k < off[u + 1]; k += 32) Visit(cols[k], u, nv, parent, next, nnext);
  }
}

struct LevelArgs {
  ufile_devio_view_t v;
  const ull *off;
  uint64_t nv, cols_off;
  const uint32_t *cur;
  ull ncur;
  ull *parent;
  uint32_t *next;
  ull *nnext;
  uint32_t *scratch;  // 32 lanes x chunk entries per warp
  uint32_t chunk;     // entries a lane reads at once
  ull *bytes;
  long long *error;  // the first failure's -errno
};

// The warp visits every lane's `got` entries, in turn, all 32 lanes on each.
__device__ void VisitLanes(const LevelArgs &a, const uint32_t *warp_buf, uint32_t u, ull got) {
  const unsigned lane = threadIdx.x % 32;
  for (int l = 0; l < 32; l++) {
    const ull gl = __shfl_sync(kFull, got, l);
    const uint32_t ul = __shfl_sync(kFull, u, l);
    const uint32_t *src = warp_buf + static_cast<ull>(l) * a.chunk;
    for (ull k = lane; k < gl; k += 32) Visit(src[k], ul, a.nv, a.parent, a.next, a.nnext);
  }
}

// One level out of core: each lane reads its frontier vertex's list from the
// file (warp_submit_reads: one doorbell for the warp), in chunks; the warp
// then expands the lists together. A lane refused a slot (-EAGAIN) retries.
__global__ void DevioLevel(LevelArgs a) {
  const ull tid = blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x;
  const ull warp = tid / 32, nwarps = gridDim.x * static_cast<ull>(blockDim.x) / 32;
  const unsigned lane = threadIdx.x % 32, queue = static_cast<unsigned>(warp % a.v.num_queues);
  uint32_t *warp_buf = a.scratch + warp * 32 * a.chunk;
  uint32_t *mine = warp_buf + static_cast<ull>(lane) * a.chunk;
  for (ull base = warp * 32; base < a.ncur; base += nwarps * 32) {
    const bool have = base + lane < a.ncur;
    const uint32_t u = have ? a.cur[base + lane] : 0;
    ull pos = have ? a.off[u] : 0;
    const ull end = have ? a.off[u + 1] : 0;
    while (__any_sync(kFull, pos < end)) {
      const ull n = end - pos < a.chunk ? end - pos : a.chunk;
      ufile::dev::Ticket t = ufile::dev::warp_submit_reads(
          a.v, queue, 0, mine, n * 4, static_cast<int64_t>(a.cols_off + pos * 4));
      const int64_t r = ufile::dev::warp_wait_each(a.v, t);
      __syncwarp();  // every lane's buffer, filled by the warp, is seen by all
      const bool again = r == -UFILE_DEVIO_EAGAIN;
      const bool bad = !again && r != static_cast<int64_t>(n * 4);
      if (bad)
        atomicCAS(reinterpret_cast<ull *>(a.error), 0ull, static_cast<ull>(r < 0 ? r : -EIO));
      if (__any_sync(kFull, bad)) return;
      const ull got = again ? 0 : n;
      if (got > 0) atomicAdd(a.bytes, got * 4);
      VisitLanes(a, warp_buf, u, got);
      pos += got;
      if (__any_sync(kFull, again)) __nanosleep(1000);
    }
    if (__any_sync(kFull, *reinterpret_cast<volatile long long *>(a.error) != 0)) return;
  }
}

// The host thread sleeps in cudaDeviceSynchronize instead of spinning, so
// the CPU cores measured are the I/O's. Best effort: a context made earlier
// (by libufile) keeps its flags.
void PreferBlockingSync() {
  (void)cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  (void)cudaGetLastError();
}

// Frontier arrays and the parent array, shared by both searches.
struct Search {
  ull *parent = nullptr, *counters = nullptr;  // counters: nnext, bytes, error
  uint32_t *cur = nullptr, *next = nullptr;
};

int AllocSearch(Search *s, uint64_t nv, std::string *err) {
  G500_CUDA(cudaMalloc(&s->parent, nv * sizeof(ull)), "cudaMalloc parent");
  G500_CUDA(cudaMalloc(&s->cur, nv * sizeof(uint32_t)), "cudaMalloc frontier");
  G500_CUDA(cudaMalloc(&s->next, nv * sizeof(uint32_t)), "cudaMalloc frontier");
  G500_CUDA(cudaMalloc(&s->counters, 3 * sizeof(ull)), "cudaMalloc counters");
  return 0;
}

void FreeSearch(Search *s) {
  cudaFree(s->parent);
  cudaFree(s->cur);
  cudaFree(s->next);
  cudaFree(s->counters);
  *s = Search{};
}

int StartSearch(Search *s, uint64_t nv, uint64_t root, std::string *err) {
  const ull r = root;
  const uint32_t r32 = static_cast<uint32_t>(root);
  G500_CUDA(cudaMemset(s->parent, 0xff, nv * sizeof(ull)), "cudaMemset parent");
  G500_CUDA(cudaMemset(s->counters, 0, 3 * sizeof(ull)), "cudaMemset counters");
  G500_CUDA(cudaMemcpy(s->parent + root, &r, sizeof r, cudaMemcpyHostToDevice), "set root");
  G500_CUDA(cudaMemcpy(s->cur, &r32, sizeof r32, cudaMemcpyHostToDevice), "set frontier");
  return 0;
}

// After a level: the next frontier's size and the error word; swaps frontiers.
int EndLevel(Search *s, ull *ncur, long long *error, std::string *err) {
  G500_CUDA(cudaGetLastError(), "level kernel launch");
  G500_CUDA(cudaDeviceSynchronize(), "level kernel");
  ull c[3];
  G500_CUDA(cudaMemcpy(c, s->counters, sizeof c, cudaMemcpyDeviceToHost), "read counters");
  *ncur = c[0];
  *error = static_cast<long long>(c[2]);
  G500_CUDA(cudaMemset(s->counters, 0, sizeof(ull)), "reset frontier count");
  uint32_t *t = s->cur;
  s->cur = s->next;
  s->next = t;
  return 0;
}

}  // namespace

struct MemGraph {
  ull *off = nullptr;
  uint32_t *cols = nullptr;
  uint64_t nv = 0;
  Search s;
};

int UploadGraph(const uint64_t *offsets, const uint32_t *cols, uint64_t nv, uint64_t ne,
                MemGraph **out, std::string *err) {
  PreferBlockingSync();
  auto *g = new MemGraph;
  g->nv = nv;
  *out = g;
  G500_CUDA(cudaMalloc(&g->off, (nv + 1) * sizeof(ull)), "cudaMalloc row offsets");
  G500_CUDA(cudaMalloc(&g->cols, ne * sizeof(uint32_t)), "cudaMalloc column indices");
  G500_CUDA(cudaMemcpy(g->off, offsets, (nv + 1) * sizeof(ull), cudaMemcpyHostToDevice),
            "copy row offsets");
  G500_CUDA(cudaMemcpy(g->cols, cols, ne * sizeof(uint32_t), cudaMemcpyHostToDevice),
            "copy column indices");
  return AllocSearch(&g->s, nv, err);
}

int BfsInMemory(MemGraph *g, uint64_t root, int64_t *parent, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  int rc = StartSearch(&g->s, g->nv, root, err);
  ull ncur = 1;
  long long error = 0;
  while (rc == 0 && ncur > 0) {
    const ull blocks = (ncur * 32 + kBlock - 1) / kBlock;
    MemLevel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kBlock>>>(
        g->off, g->cols, g->nv, g->s.cur, ncur, g->s.parent, g->s.next, g->s.counters);
    rc = EndLevel(&g->s, &ncur, &error, err);
  }
  if (rc != 0) return rc;
  G500_CUDA(cudaMemcpy(parent, g->s.parent, g->nv * sizeof(ull), cudaMemcpyDeviceToHost),
            "copy parents");
  return 0;
}

void FreeGraph(MemGraph *g) {
  if (g == nullptr) return;
  cudaFree(g->off);
  cudaFree(g->cols);
  FreeSearch(&g->s);
  delete g;
}

struct DevioGraph {
  ufile::DeviceQueues q;
  ull *off = nullptr;
  uint32_t *scratch = nullptr;
  uint64_t nv = 0, cols_off = 0;
  unsigned warps = 0;
  uint32_t chunk = 0;
  Search s;
};

namespace {

int CreateQueues(DevioGraph *g, CUfileHandle_t fh, const DevioOptions &o, std::string *err) {
  ufile_devio_params_t p;
  ufile_devio_params_init(&p);
  p.num_queues = o.queues;
  p.queue_depth = o.depth;
  p.staging_bytes = o.staging_bytes;
  if (o.sq_threads > 0) p.sq_threads = o.sq_threads;
  const int rc = g->q.Create(&fh, 1, &p);
  if (rc != 0) *err = "ufile_devio_create: " + std::string(strerror(-rc));
  return rc;
}

}  // namespace

int OpenDevio(CUfileHandle_t fh, const uint64_t *offsets, uint64_t nv, uint64_t cols_off,
              const DevioOptions &o, DevioGraph **out, std::string *err) {
  if (o.queues == 0 || o.depth < 32 || o.staging_bytes < 4)
    return *err = "queues, depth (>= 32) and staging_bytes must be positive", -EINVAL;
  PreferBlockingSync();
  auto *g = new DevioGraph;
  *out = g;
  g->nv = nv;
  g->cols_off = cols_off;
  constexpr unsigned kWarpsPerBlock = kBlock / 32;
  const unsigned warps = o.warps > 0 ? o.warps : o.queues * o.depth / 32;
  g->warps = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock * kWarpsPerBlock;
  g->chunk = static_cast<uint32_t>(o.staging_bytes / 4);
  const uint64_t scratch = uint64_t{g->warps} * 32 * g->chunk * sizeof(uint32_t);
  const uint64_t need = (nv + 1) * 8 + nv * 16 + scratch;
  size_t free_b = 0, total_b = 0;
  G500_CUDA(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  if (need > free_b)
    return *err = "row offsets and search arrays need " + std::to_string(need) +
                  " bytes of GPU memory, " + std::to_string(free_b) + " free",
           -ENOMEM;
  G500_CUDA(cudaMalloc(&g->off, (nv + 1) * sizeof(ull)), "cudaMalloc row offsets");
  G500_CUDA(cudaMemcpy(g->off, offsets, (nv + 1) * sizeof(ull), cudaMemcpyHostToDevice),
            "copy row offsets");
  G500_CUDA(cudaMalloc(&g->scratch, scratch), "cudaMalloc read buffers");
  const int rc = AllocSearch(&g->s, nv, err);
  return rc != 0 ? rc : CreateQueues(g, fh, o, err);
}

int BfsDevio(DevioGraph *g, uint64_t root, int64_t *parent, DevioStats *stats, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  int rc = StartSearch(&g->s, g->nv, root, err);
  ull ncur = 1;
  long long error = 0;
  while (rc == 0 && ncur > 0) {
    const LevelArgs a{g->q.view(),
                      g->off,
                      g->nv,
                      g->cols_off,
                      g->s.cur,
                      ncur,
                      g->s.parent,
                      g->s.next,
                      g->s.counters,
                      g->scratch,
                      g->chunk,
                      g->s.counters + 1,
                      reinterpret_cast<long long *>(g->s.counters + 2)};
    DevioLevel<<<g->warps * 32 / kBlock, kBlock>>>(a);
    rc = EndLevel(&g->s, &ncur, &error, err);
    stats->levels++;
    if (rc == 0 && error != 0)
      return *err = "device read of neighbour lists: " +
                    std::string(strerror(static_cast<int>(-error))),
             static_cast<int>(error);
  }
  if (rc != 0) return rc;
  ull bytes = 0;
  G500_CUDA(cudaMemcpy(&bytes, g->s.counters + 1, sizeof bytes, cudaMemcpyDeviceToHost),
            "read byte count");
  stats->bytes_read += bytes;
  stats->path = g->q.path();
  G500_CUDA(cudaMemcpy(parent, g->s.parent, g->nv * sizeof(ull), cudaMemcpyDeviceToHost),
            "copy parents");
  return 0;
}

void CloseDevio(DevioGraph *g) {
  if (g == nullptr) return;
  (void)g->q.Destroy();
  cudaFree(g->off);
  cudaFree(g->scratch);
  FreeSearch(&g->s);
  delete g;
}

}  // namespace g500::gpu
