// SPDX-License-Identifier: Apache-2.0
#include "bfs_hostio.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

namespace g500 {

// One level's shared state, and each worker's batch in progress.
struct HostDrivenBfs::Level {
  const GraphFile &f;
  gpu::HostioGpu *gpu;
  const HostioOptions &o;
  const uint32_t *v;  // the sorted frontier
  uint64_t n;
  std::atomic<uint64_t> cursor{0};  // chunks handed out
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status failure;  // guarded by mu

  struct Batch {
    int slot = 0;
    uint64_t used = 0, pieces = 0;  // buffer entries and index entries taken
    uint64_t bytes = 0, reads = 0;
  };
  std::vector<Batch> batch;

  bool RecordFailure(Status s) {
    std::lock_guard<std::mutex> lock(mu);
    if (failure.ok()) failure = std::move(s);
    failed.store(true, std::memory_order_relaxed);
    return false;
  }
  bool Gpu(int rc, const std::string &err) {
    return rc == 0 || RecordFailure(Status::Error(rc, err));
  }

  // Sends worker w's batch to the GPU and moves to its other slot, once the
  // GPU is done with that one.
  bool Flush(unsigned w) {
    Batch &b = batch[w];
    if (b.pieces == 0) return true;
    std::string err;
    if (!Gpu(gpu::HostioExpand(gpu, w, b.slot, b.pieces, &err), err)) return false;
    b.slot ^= 1, b.used = 0, b.pieces = 0;
    return Gpu(gpu::HostioWait(gpu, w, b.slot, &err), err);
  }

  // Column entries [first, first + count) into the batch's buffer; false on
  // a failure (recorded).
  bool Read(unsigned w, uint64_t first, uint64_t count) {
    Batch &b = batch[w];
    const gpu::HostioSlot s = gpu::HostioSlotOf(gpu, w, b.slot);
    const int64_t got = f.ReadCols(s.buf, b.used * 4, first, count);
    b.reads++;
    if (got == static_cast<int64_t>(count * 4)) {
      b.bytes += count * 4;
      return true;
    }
    if (got >= 0)
      return RecordFailure(Status::Error(-EIO, "graph file shorter than its row offsets"));
    return RecordFailure(
        Status::Error(static_cast<int>(got),
                      "cuFileRead of neighbour lists into GPU memory: " + CuFileReadError(got)));
  }

  void Index(unsigned w, uint32_t vertex, uint64_t pos, uint64_t len) {
    Batch &b = batch[w];
    const gpu::HostioSlot s = gpu::HostioSlotOf(gpu, w, b.slot);
    s.vertex[b.pieces] = vertex;
    s.pos[b.pieces] = static_cast<uint32_t>(pos);
    s.len[b.pieces] = static_cast<uint32_t>(len);
    b.pieces++;
  }

  // Room for `entries` buffer entries and `pieces` index entries.
  bool Room(unsigned w, uint64_t entries, uint64_t pieces) {
    const Batch &b = batch[w];
    const uint64_t cap = o.buffer_bytes / 4;
    if (b.used + entries <= cap && b.pieces + pieces <= o.index_entries) return true;
    return Flush(w);
  }

  // Frontier vertices [i, e) by worker w.
  bool Chunk(unsigned w, uint64_t i, uint64_t e) {
    const auto off = f.offsets();
    const uint64_t cap = o.buffer_bytes / 4, gap = o.merge_gap_bytes / 4;
    while (i < e) {
      const uint64_t start = off[v[i]], end = off[v[i] + 1];
      if (end - start > cap) {  // a list longer than a buffer: a batch a piece
        for (uint64_t at = start; at < end; at += cap) {
          const uint64_t m = std::min(cap, end - at);
          if (!Room(w, m, 1) || !Read(w, at, m)) return false;
          Index(w, v[i], batch[w].used, m);
          batch[w].used += m;
        }
        i++;
        continue;
      }
      // The next vertices whose lists are near enough to read in one request.
      uint64_t j = i + 1, last = end;
      while (j < e && j - i < o.index_entries && off[v[j]] >= last && off[v[j]] - last <= gap &&
             off[v[j] + 1] - start <= cap)
        last = off[v[j++] + 1];
      if (last > start) {
        if (!Room(w, last - start, j - i) || !Read(w, start, last - start)) return false;
        const uint64_t at = batch[w].used;
        for (uint64_t k = i; k < j; k++)
          if (off[v[k] + 1] > off[v[k]])
            Index(w, v[k], at + off[v[k]] - start, off[v[k] + 1] - off[v[k]]);
        batch[w].used += last - start;
      }
      i = j;
    }
    return true;
  }

  void Work(unsigned w) {
    const uint64_t c = o.chunk_vertices;
    for (uint64_t k; !failed.load(std::memory_order_relaxed) &&
                     (k = cursor.fetch_add(1, std::memory_order_relaxed)) * c < n;)
      if (!Chunk(w, k * c, std::min(n, (k + 1) * c))) return;
    if (!failed.load(std::memory_order_relaxed)) Flush(w);
  }
};

HostDrivenBfs::HostDrivenBfs(const GraphFile &f, gpu::HostioGpu *gpu, const HostioOptions &o)
    : f_(f), gpu_(gpu), o_(o), pool_(std::make_unique<WorkerPool>(Workers(o))) {}

HostDrivenBfs::~HostDrivenBfs() = default;

Status HostDrivenBfs::Run(uint64_t root, FileBfsStats *stats) {
  if (o_.buffer_bytes < 4 || o_.index_entries == 0 || o_.chunk_vertices == 0)
    return Status::Error(-EINVAL,
                         "buffer_bytes, index_entries and chunk_vertices must be positive");
  if (root >= f_.header().nv)
    return Status::Error(-EINVAL, "root " + std::to_string(root) + " out of range");
  std::string err;
  int rc = gpu::HostioStart(gpu_, root, &err);
  for (uint64_t ncur = 1; rc == 0 && ncur > 0;) {
    const uint32_t *v = nullptr;
    if ((rc = gpu::HostioFrontier(gpu_, ncur, &v, &err)) != 0) break;
    Level level{f_, gpu_, o_, v, ncur};
    level.batch.resize(pool_->size());
    pool_->Run([&](unsigned w) { level.Work(w); });
    for (const auto &b : level.batch) stats->bytes_read += b.bytes, stats->reads += b.reads;
    stats->levels++;
    // Every queued expansion ends before the frontier is read or reused.
    rc = gpu::HostioEndLevel(gpu_, &ncur, &err);
    if (!level.failure.ok()) return level.failure;
  }
  return rc == 0 ? Status::Ok() : Status::Error(rc, err);
}

}  // namespace g500
