// SPDX-License-Identifier: Apache-2.0
#include <ufile/device.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <ufile/device.cuh>

#include "bfs_gpu.h"
#include "bfs_gpu_search.cuh"

namespace g500::gpu {
namespace {

using namespace detail;  // NOLINT: the searches' shared pieces

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
  const uint32_t *cur;  // sorted
  ull ncur;
  ull *parent;
  uint32_t *next;
  ull *nnext;
  uint32_t *scratch;  // 32 lanes x chunk entries per warp
  uint32_t chunk;     // entries a lane reads at once
  uint32_t gap;       // entries read across between two lists of one request
  ull *bytes;
  long long *error;  // the first failure's -errno
  ull *cursor;       // frontier vertices handed out to warps
};

constexpr int kWarpsPerBlock = kBlock / 32;
constexpr int kPieces = 128;       // list pieces a warp round plans
constexpr uint32_t kSegment = 64;  // frontier vertices a warp takes at once

// Part of a vertex's list: n entries at `at` in lane `lane`'s buffer.
struct Piece {
  uint32_t u, lane, at, n;
};

// A warp round's plan: up to 32 requests (one a lane) covering the lists of
// consecutive frontier vertices, with the gaps between them up to `gap`.
struct Plan {
  Piece pieces[kPieces];
  ull first[32];   // each request's first column entry
  uint32_t n[32];  // and its entries
  uint32_t npieces, nreq;
  ull i, pos;  // where the next round starts: frontier index, entry within its list
};

// Lane 0 plans the next round from (i, pos) up to frontier index end.
__device__ void PlanRound(const LevelArgs &a, Plan &p, ull end) {
  int req = -1;
  ull rs = 0, re = 0;
  p.npieces = 0;
  while (p.i < end && p.npieces < kPieces) {
    const uint32_t u = a.cur[p.i];
    const ull s = a.off[u] + p.pos, e = a.off[u + 1];
    if (s == e) {
      p.i++, p.pos = 0;
      continue;
    }
    const bool join = req >= 0 && s >= re && s - re <= a.gap && s + 1 - rs <= a.chunk;
    if (!join) {
      if (req == 31) break;
      req++, rs = s, re = s;
    }
    const ull take = e < rs + a.chunk ? e : rs + a.chunk;
    p.pieces[p.npieces++] = {u, static_cast<uint32_t>(req), static_cast<uint32_t>(s - rs),
                             static_cast<uint32_t>(take - s)};
    re = take;
    p.first[req] = rs;
    p.n[req] = static_cast<uint32_t>(re - rs);
    if (take == e)
      p.i++, p.pos = 0;
    else
      p.pos = take - a.off[u];
  }
  p.nreq = static_cast<uint32_t>(req + 1);
}

// Every lane's request of the plan, retried while a lane is refused a slot
// (-EAGAIN); false (and the error word set) on a failure.
__device__ bool ReadRound(const LevelArgs &a, const Plan &p, unsigned queue, uint32_t *warp_buf) {
  const unsigned lane = threadIdx.x % 32;
  bool pending = lane < p.nreq;
  const ull n = pending ? p.n[lane] : 0;
  const int64_t off = static_cast<int64_t>(a.cols_off + (pending ? p.first[lane] : 0) * 4);
  while (__any_sync(kFull, pending)) {
    ufile::dev::Ticket t = ufile::dev::warp_submit_reads(
        a.v, queue, 0, warp_buf + static_cast<ull>(lane) * a.chunk, pending ? n * 4 : 0, off);
    const int64_t r = ufile::dev::warp_wait_each(a.v, t);
    __syncwarp();  // every lane's buffer, filled by the warp, is seen by all
    const bool again = pending && r == -UFILE_DEVIO_EAGAIN;
    const bool bad = pending && !again && r != static_cast<int64_t>(n * 4);
    if (bad) atomicCAS(reinterpret_cast<ull *>(a.error), 0ull, static_cast<ull>(r < 0 ? r : -EIO));
    if (__any_sync(kFull, bad)) return false;
    if (pending && !again) atomicAdd(a.bytes, n * 4);
    pending = again;
    if (__any_sync(kFull, again)) __nanosleep(1000);
  }
  return true;
}

// One level out of core. Warps take segments of the sorted frontier; lane 0
// plans a round of requests (consecutive lists merged, long lists split),
// the lanes read them with warp_submit_reads (one doorbell a warp) into
// their buffers, and the warp expands every piece together.
__global__ void DevioLevel(LevelArgs a) {
  __shared__ Plan plans[kWarpsPerBlock];
  const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const ull warp = (blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x) / 32;
  const unsigned queue = static_cast<unsigned>(warp % a.v.num_queues);
  uint32_t *warp_buf = a.scratch + warp * 32 * a.chunk;
  Plan &p = plans[w];
  for (;;) {
    if (lane == 0) p.i = atomicAdd(a.cursor, static_cast<ull>(kSegment)), p.pos = 0;
    __syncwarp();
    const ull begin = p.i;
    if (begin >= a.ncur) return;
    const ull end = begin + kSegment < a.ncur ? begin + kSegment : a.ncur;
    for (;;) {
      const bool more = p.i < end;
      __syncwarp();  // every lane has read p.i before lane 0 moves it
      if (!more) break;
      if (lane == 0) PlanRound(a, p, end);
      __syncwarp();
      if (!ReadRound(a, p, queue, warp_buf)) return;
      for (uint32_t k = 0; k < p.npieces; k++) {
        const Piece pc = p.pieces[k];
        const uint32_t *src = warp_buf + static_cast<ull>(pc.lane) * a.chunk + pc.at;
        for (uint32_t j = lane; j < pc.n; j += 32)
          Visit(src[j], pc.u, a.nv, a.parent, a.next, a.nnext);
      }
      __syncwarp();  // the plan is rewritten next round
    }
    if (__any_sync(kFull, *reinterpret_cast<volatile long long *>(a.error) != 0)) return;
  }
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
  uint32_t chunk = 0, gap = 0;
  int key_bits = 0;
  void *sort_tmp = nullptr;
  size_t sort_bytes = 0;
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
  if (nv > 0x7fffffffu) return *err = "more vertices than the frontier sort takes", -EINVAL;
  PreferBlockingSync();
  auto *g = new DevioGraph;
  *out = g;
  g->nv = nv;
  g->cols_off = cols_off;
  const unsigned warps = o.warps > 0 ? o.warps : o.queues * o.depth / 32;
  g->warps = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock * kWarpsPerBlock;
  g->chunk = static_cast<uint32_t>(o.staging_bytes / 4);
  g->gap = static_cast<uint32_t>(o.merge_gap_bytes / 4);
  int rc = SortSpace(nv, &g->key_bits, &g->sort_bytes, err);
  if (rc != 0) return rc;
  const uint64_t scratch = uint64_t{g->warps} * 32 * g->chunk * sizeof(uint32_t);
  const uint64_t need = (nv + 1) * 8 + nv * 16 + scratch + g->sort_bytes;
  if ((rc = FitsInGpu(need, "row offsets and search arrays", err)) != 0) return rc;
  G500_CUDA(cudaMalloc(&g->off, (nv + 1) * sizeof(ull)), "cudaMalloc row offsets");
  G500_CUDA(cudaMemcpy(g->off, offsets, (nv + 1) * sizeof(ull), cudaMemcpyHostToDevice),
            "copy row offsets");
  G500_CUDA(cudaMalloc(&g->scratch, scratch), "cudaMalloc read buffers");
  G500_CUDA(cudaMalloc(&g->sort_tmp, g->sort_bytes), "cudaMalloc sort space");
  rc = AllocSearch(&g->s, nv, err);
  return rc != 0 ? rc : CreateQueues(g, fh, o, err);
}

int BfsDevio(DevioGraph *g, uint64_t root, int64_t *parent, DevioStats *stats, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  int rc = StartSearch(&g->s, g->nv, root, err);
  ull ncur = 1;
  long long error = 0;
  while (rc == 0 && ncur > 0) {
    // Sorted, so that lists are read in file order.
    rc = SortCur(&g->s, g->sort_tmp, g->sort_bytes, g->key_bits, ncur, err);
    if (rc != 0) return rc;
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
                      g->gap,
                      g->s.counters + 1,
                      reinterpret_cast<long long *>(g->s.counters + 2),
                      g->s.counters + 3};
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
  cudaFree(g->sort_tmp);
  FreeSearch(&g->s);
  delete g;
}

}  // namespace g500::gpu
