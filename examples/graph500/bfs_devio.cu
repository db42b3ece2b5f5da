// SPDX-License-Identifier: Apache-2.0
// gpu-devio: a breadth-first search whose kernels read the graph file
// themselves, through ufile's device queues (<ufile/device.cuh>).
//
// What stays in GPU memory: the row offsets (where each neighbour list lies
// in the file), the parent array and two frontiers. The column indices, the
// bulk of the graph, stay in the file: a search reads the lists of the
// vertices it reaches, once each.
//
// A level, in one kernel launch:
//   1. The host sorts the frontier (CUB radix sort), so that consecutive
//      frontier vertices have nearby lists in the file.
//   2. Warps take segments of kSegment frontier vertices from a shared cursor.
//   3. For a segment, lane 0 plans a round (PlanRound): up to 32 requests, one
//      a lane, each covering the lists of consecutive vertices (read across
//      gaps up to merge_gap_bytes: one larger read costs less than two) or a
//      piece of a list longer than a lane's buffer.
//   4. The 32 lanes submit their requests together (warp_submit_reads: one
//      doorbell a warp) into their own device buffers and wait for them
//      (ReadRound). A queue that is full refuses a lane (-EAGAIN): it retries.
//   5. The warp claims every neighbour of every planned list (ClaimVertex:
//      a compare-and-swap on the parent, the winner appends the vertex to the
//      next frontier), then plans the next round.
// The host does nothing per request: it sorts and launches once a level.
#include <ufile/device.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <ufile/device.cuh>

#include "bfs_devio.h"
#include "bfs_gpu_common.cuh"

namespace g500::gpu {
namespace {

using namespace detail;  // NOLINT: the searches' shared pieces

constexpr int kWarpsPerBlock = kBlock / 32;
constexpr int kPieces = 128;       // list pieces a warp round plans
constexpr uint32_t kSegment = 64;  // frontier vertices a warp takes at once

struct LevelArgs {
  ufile_devio_view_t v;  // the device queues
  const ull *off;        // row offsets
  uint64_t nv, cols_off;
  const uint32_t *cur;  // the frontier, sorted
  ull ncur;
  ull *parent;
  uint32_t *next;
  ull *nnext;
  uint32_t *scratch;  // a warp's 32 lane buffers of `chunk` entries each
  uint32_t chunk;     // entries a lane reads at once
  uint32_t gap;       // entries read across between two lists of one request
  ull *bytes;
  long long *error;  // the first failure's -errno
  ull *cursor;       // frontier vertices handed out to warps
};

// Part of a vertex's list: n entries at `at` in lane `lane`'s buffer.
struct ListPiece {
  uint32_t u, lane, at, n;
};

// A warp's round: up to 32 requests (one a lane) and the list pieces they
// hold. In shared memory, written by lane 0, read by all.
struct WarpRound {
  ListPiece pieces[kPieces];
  ull first[32];   // each request's first column entry
  uint32_t n[32];  // and its entries
  uint32_t npieces, nreq;
  ull i, pos;  // where the next round starts: frontier index, entry within its list
};

// Lane 0 plans the next round from (i, pos) up to frontier index end.
__device__ void PlanRound(const LevelArgs &a, WarpRound &r, ull end) {
  int req = -1;
  ull rs = 0, re = 0;  // the current request's first and past-last entries
  r.npieces = 0;
  while (r.i < end && r.npieces < kPieces) {
    const uint32_t u = a.cur[r.i];
    const ull s = a.off[u] + r.pos, e = a.off[u + 1];
    if (s == e) {
      r.i++, r.pos = 0;
      continue;
    }
    // Joins the current request if the gap is small and the list's first
    // entry still fits in the lane's buffer.
    const bool join = req >= 0 && s >= re && s - re <= a.gap && s + 1 - rs <= a.chunk;
    if (!join) {
      if (req == 31) break;
      req++, rs = s, re = s;
    }
    const ull take = e < rs + a.chunk ? e : rs + a.chunk;
    r.pieces[r.npieces++] = {u, static_cast<uint32_t>(req), static_cast<uint32_t>(s - rs),
                             static_cast<uint32_t>(take - s)};
    re = take;
    r.first[req] = rs;
    r.n[req] = static_cast<uint32_t>(re - rs);
    if (take == e)
      r.i++, r.pos = 0;
    else
      r.pos = take - a.off[u];  // the rest of a long list: the next request
  }
  r.nreq = static_cast<uint32_t>(req + 1);
}

// Every lane's request of the round, retried while a lane is refused a slot
// (-EAGAIN); false (and the error word set) on a failure.
__device__ bool ReadRound(const LevelArgs &a, const WarpRound &r, unsigned queue,
                          uint32_t *warp_buf) {
  const unsigned lane = threadIdx.x % 32;
  bool pending = lane < r.nreq;
  const ull n = pending ? r.n[lane] : 0;
  const int64_t off = static_cast<int64_t>(a.cols_off + (pending ? r.first[lane] : 0) * 4);
  while (__any_sync(kFull, pending)) {
    // Every lane takes part; a lane with nothing to read passes 0 bytes.
    ufile::dev::Ticket t = ufile::dev::warp_submit_reads(
        a.v, queue, 0, warp_buf + static_cast<ull>(lane) * a.chunk, pending ? n * 4 : 0, off);
    const int64_t got = ufile::dev::warp_wait_each(a.v, t);
    __syncwarp();  // every lane's buffer, filled for the warp, is seen by all
    const bool again = pending && got == -UFILE_DEVIO_EAGAIN;
    const bool bad = pending && !again && got != static_cast<int64_t>(n * 4);
    if (bad)
      atomicCAS(reinterpret_cast<ull *>(a.error), 0ull, static_cast<ull>(got < 0 ? got : -EIO));
    if (__any_sync(kFull, bad)) return false;
    if (pending && !again) atomicAdd(a.bytes, n * 4);
    pending = again;
    if (__any_sync(kFull, again)) __nanosleep(1000);
  }
  return true;
}

// One level: steps 2-5 of the file's comment.
__global__ void DevioLevel(LevelArgs a) {
  __shared__ WarpRound rounds[kWarpsPerBlock];
  const unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
  const ull warp = (blockIdx.x * static_cast<ull>(blockDim.x) + threadIdx.x) / 32;
  const unsigned queue = static_cast<unsigned>(warp % a.v.num_queues);
  uint32_t *warp_buf = a.scratch + warp * 32 * a.chunk;
  WarpRound &r = rounds[w];
  for (;;) {
    if (lane == 0) r.i = atomicAdd(a.cursor, static_cast<ull>(kSegment)), r.pos = 0;
    __syncwarp();
    const ull begin = r.i;
    if (begin >= a.ncur) return;
    const ull end = begin + kSegment < a.ncur ? begin + kSegment : a.ncur;
    for (;;) {
      const bool more = r.i < end;
      __syncwarp();  // every lane has read r.i before lane 0 moves it
      if (!more) break;
      if (lane == 0) PlanRound(a, r, end);
      __syncwarp();
      if (!ReadRound(a, r, queue, warp_buf)) return;
      for (uint32_t k = 0; k < r.npieces; k++) {
        const ListPiece pc = r.pieces[k];
        const uint32_t *src = warp_buf + static_cast<ull>(pc.lane) * a.chunk + pc.at;
        for (uint32_t j = lane; j < pc.n; j += 32)
          ClaimVertex(src[j], pc.u, a.nv, a.parent, a.next, a.nnext);
      }
      __syncwarp();  // the round is rewritten next
    }
    // Another warp failed: stop taking segments.
    if (__any_sync(kFull, *reinterpret_cast<volatile long long *>(a.error) != 0)) return;
  }
}

}  // namespace

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
  BfsArrays s;
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
  // By default one queue slot a lane, so that no submit is refused.
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
  rc = AllocArrays(&g->s, nv, err);
  return rc != 0 ? rc : CreateQueues(g, fh, o, err);
}

int BfsDevio(DevioGraph *g, uint64_t root, DevioStats *stats, std::string *err) {
  if (root >= g->nv) return *err = "root out of range", -EINVAL;
  int rc = StartSearch(&g->s, g->nv, root, err);
  ull ncur = 1;
  long long error = 0;
  while (rc == 0 && ncur > 0) {
    rc = SortCur(&g->s, g->sort_tmp, g->sort_bytes, g->key_bits, ncur, err);
    if (rc != 0) return rc;
    ull *c = g->s.counters;  // next frontier's size, bytes read, error, cursor
    const LevelArgs a{g->q.view(), g->off,
                      g->nv,       g->cols_off,
                      g->s.cur,    ncur,
                      g->s.parent, g->s.next,
                      c,           g->scratch,
                      g->chunk,    g->gap,
                      c + 1,       reinterpret_cast<long long *>(c + 2),
                      c + 3};
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
  return 0;
}

int DevioParents(DevioGraph *g, int64_t *parent, std::string *err) {
  return CopyParents(&g->s, g->nv, parent, err);
}

void CloseDevio(DevioGraph *g) {
  if (g == nullptr) return;
  (void)g->q.Destroy();
  cudaFree(g->off);
  cudaFree(g->scratch);
  cudaFree(g->sort_tmp);
  FreeArrays(&g->s);
  delete g;
}

}  // namespace g500::gpu
