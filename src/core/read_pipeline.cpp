// SPDX-License-Identifier: Apache-2.0
#include "core/read_pipeline.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "base/log.h"
#include "core/chunk_io.h"
#include "gpu/copy_lanes.h"
#include "gpu/cuda_api.h"
#include "gpu/staging_pool.h"
#include "sys/futex.h"

namespace ufile {
namespace {

constexpr long kWaitNs = 1000000;     // a lost wake-up costs at most 1 ms
constexpr uint64_t kNotRead = ~0ull;  // a chunk whose bytes are not in yet

// Measured on the H100 machine: a ring of 4
// buffers lost up to half the throughput against 8; the other settings
// (copy size 0.5-4 MiB, spinning 100-20000 times, the caller reading or not)
// moved nothing beyond the run-to-run spread.
constexpr size_t kRing = kLaneEvents;    // staging buffers per request (4 MiB each)
constexpr size_t kMinCopy = 2u << 20;    // while the copy engine is busy, copy at least this
constexpr int kSpins = 1000;             // polls of progress before the copier sleeps

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class ReadPipeline {
 public:
  ReadPipeline(Job &job, LaneLease lane) : job_(job), lane_(std::move(lane)) {}

  // Leases the ring: the first buffer waiting if need be, the others only if
  // free (fewer buffers mean less overlap, never a deadlock between requests).
  Status Prepare() {
    const Plan &plan = job_.plan;
    const size_t seg_bytes =
        std::min(job_.rt.staging().largest(), (job_.req.size + 4095) / 4096 * 4096);
    per_seg_ = std::max<size_t>(1, seg_bytes / job_.chunk_size);
    const size_t segments = (plan.count() + per_seg_ - 1) / per_seg_;
    const size_t want = std::min(segments, kRing);
    for (size_t k = 0; k < want; ++k) {
      Result<StagingLease> l = k == 0 ? job_.rt.staging().Lease(seg_bytes)
                                      : job_.rt.staging().TryLease(seg_bytes);
      if (!l.ok()) {
        if (k == 0) return l.status();
        break;
      }
      if (!*l || l->size() < seg_bytes) break;
      ring_.push_back(std::move(*l));
    }
    if (ring_.empty()) return Status::Errno(ENOMEM);
    // A plan with an unaligned head (O_DIRECT) starts segment 0 so far into its
    // buffer that the middle chunks' O_DIRECT reads land aligned; the segment
    // still fits: align + (per_seg - 1) chunks.
    if (plan.count() > 1 && !plan.at(0).direct && plan.at(1).direct) {
      const size_t align = job_.req.file->align();
      lead_ = (align - plan.at(0).len % align) % align;
    }
    got_ = std::make_unique<std::atomic<uint64_t>[]>(plan.count());
    for (size_t i = 0; i < plan.count(); ++i) got_[i].store(kNotRead, std::memory_order_relaxed);
    return Status::Ok();
  }

  // Participant 0, the calling thread: copies in file order, reads when it
  // has nothing to copy, and returns when every chunk up to end of file is
  // on the GPU (or the request failed).
  void Copy() {
    while (next_ < job_.end_chunk() && !job_.failed()) {
      const uint32_t seen = progress_.load(std::memory_order_acquire);
      const bool released = Release();
      if (IssueCopy() || released) continue;
      if (readers_waiting_.load(std::memory_order_seq_cst) > 0 && WaitOldestCopy()) continue;
      if (CallerMayRead() && ReadIfFree()) continue;
      WaitForProgress(seen);
    }
    Close();
    CUresult res = Cuda().cuStreamSynchronize(lane_->stream);
    if (res != CUDA_SUCCESS) job_.FailCopy(0, "waiting for the staging copies", res);
  }

  // Participants 1..n-1: read claimed chunks into their ring slots.
  void Read() {
    size_t i;
    while (job_.Claim(&i)) {
      if (!WaitForBuffer(i)) return;
      if (!ReadChunkAt(i)) return;
    }
  }

  // No buffer goes back to the pool while a copy may still read it.
  ~ReadPipeline() {
    Close();
    if (lane_->stream) Cuda().cuStreamSynchronize(lane_->stream);
  }

 private:
  size_t SegmentOf(size_t chunk) const { return chunk / per_seg_; }
  // Chunks of a segment lie back to back in its buffer, as in the request.
  char *SlotOf(size_t chunk) const {
    const size_t seg = SegmentOf(chunk);
    const size_t first = seg * per_seg_;
    char *base = static_cast<char *>(ring_[seg % ring_.size()].data());
    return base + (seg == 0 ? lead_ : 0) + (job_.plan.start_of(chunk) - job_.plan.start_of(first));
  }
  bool BufferFree(size_t chunk) const {
    return SegmentOf(chunk) < released_.load(std::memory_order_acquire) + ring_.size();
  }
  CUevent EventOf(size_t segment) const { return lane_->done[segment % ring_.size()]; }

  bool ReadChunkAt(size_t i) {
    const Chunk c = job_.plan.at(i);
    Result<size_t> r = ReadChunk(job_.rt.engine(), *job_.req.file, c, SlotOf(i),
                                 ring_[SegmentOf(i) % ring_.size()].fixed());
    if (!r.ok()) {
      job_.Fail(i, r.status());
    } else {
      if (*r < c.len) job_.EndOfFile(i, *r);
      got_[i].store(*r, std::memory_order_release);
    }
    WakeCopier();
    return r.ok();
  }
  void WakeCopier() {
    progress_.fetch_add(1, std::memory_order_seq_cst);
    if (copier_sleeping_.load(std::memory_order_seq_cst)) FutexWakeAll(progress_);
  }

  bool ReadIfFree() {
    size_t i;
    if (!job_.TryClaim(&i, [this](size_t n) { return BufferFree(n); })) return false;
    ReadChunkAt(i);
    return true;
  }

  // Waits until chunk i's ring buffer is free; false when the request ended.
  bool WaitForBuffer(size_t i) {
    for (;;) {
      if (closed_.load(std::memory_order_acquire) || job_.failed()) return false;
      const uint32_t rel = released_.load(std::memory_order_seq_cst);
      // Close() sets closed_ before it moves released_: a reader that sees
      // the moved value also sees closed_, and never reads into a buffer
      // whose copy may still run.
      if (SegmentOf(i) < rel + ring_.size()) return !closed_.load(std::memory_order_seq_cst);
      readers_waiting_.fetch_add(1, std::memory_order_seq_cst);
      WakeCopier();  // it may be asleep waiting for chunks nobody is reading
      if (released_.load(std::memory_order_seq_cst) == rel &&
          !closed_.load(std::memory_order_seq_cst))
        FutexWait(released_, rel, kWaitNs);
      readers_waiting_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  // Frees the ring buffers of segments whose copies have completed, in order.
  bool Release() {
    uint32_t rel = released_.load(std::memory_order_relaxed);
    const uint32_t start = rel;
    while (rel < issued_segments_ && Cuda().cuEventQuery(EventOf(rel)) == CUDA_SUCCESS) ++rel;
    if (rel == start) return false;
    Publish(rel);
    return true;
  }
  void Publish(uint32_t rel) {
    released_.store(rel, std::memory_order_seq_cst);
    if (readers_waiting_.load(std::memory_order_seq_cst) > 0) FutexWakeAll(released_);
  }

  // Readers wait for a buffer and nothing is left to copy: wait for the
  // oldest segment's copy. False when no copy is in flight.
  bool WaitOldestCopy() {
    const uint32_t rel = released_.load(std::memory_order_relaxed);
    if (rel >= issued_segments_) return false;
    CUresult res = Cuda().cuEventSynchronize(EventOf(rel));
    if (res != CUDA_SUCCESS) {
      job_.FailCopy(next_, "waiting for a staging copy", res);
      return true;
    }
    Publish(rel + 1);
    return true;
  }

  bool CopyEngineIdle() const {
    return last_copied_segment_ == kNone ||
           Cuda().cuEventQuery(EventOf(last_copied_segment_)) == CUDA_SUCCESS;
  }
  // The calling thread reads a chunk only while the copy engine is idle: a
  // read delays the next copy by its own duration.
  bool CallerMayRead() const { return CopyEngineIdle(); }

  // Copies the completed run of chunks from next_ within its segment, when it
  // is worth a copy: the segment is complete, the run is large, or the copy
  // engine would otherwise idle.
  bool IssueCopy() {
    const size_t seg = SegmentOf(next_);
    size_t k = next_;
    size_t bytes = 0;
    uint64_t got;
    while (k < job_.end_chunk() && SegmentOf(k) == seg &&
           (got = got_[k].load(std::memory_order_acquire)) != kNotRead) {
      bytes += got;
      ++k;
    }
    if (k == next_) return false;
    const bool seg_done = k == job_.end_chunk() || SegmentOf(k) != seg;
    if (!seg_done && bytes < kMinCopy && !CopyEngineIdle()) return false;
    if (bytes > 0) {
      const size_t at = job_.plan.start_of(next_);
      CUdeviceptr dst = reinterpret_cast<CUdeviceptr>(job_.req.mem) + at;
      CUresult res = Cuda().cuMemcpyHtoDAsync(dst, SlotOf(next_), bytes, lane_->stream);
      if (res == CUDA_SUCCESS) res = Cuda().cuEventRecord(EventOf(seg), lane_->stream);
      if (res != CUDA_SUCCESS) {
        job_.FailCopy(next_, "cuMemcpyHtoDAsync", res);
        return true;
      }
      last_copied_segment_ = seg;
    }
    next_ = k;
    if (seg_done) issued_segments_ = static_cast<uint32_t>(seg + 1);
    return true;
  }

  void WaitForProgress(uint32_t seen) {
    for (int s = 0; s < kSpins; ++s) {
      if (progress_.load(std::memory_order_acquire) != seen) return;
      CpuRelax();
    }
    copier_sleeping_.store(true, std::memory_order_seq_cst);
    if (progress_.load(std::memory_order_seq_cst) == seen) FutexWait(progress_, seen, kWaitNs);
    copier_sleeping_.store(false, std::memory_order_relaxed);
  }

  // Readers still waiting for a buffer give up: nothing more is copied.
  void Close() {
    if (closed_.exchange(true)) return;
    released_.fetch_add(1, std::memory_order_seq_cst);  // moves the futex word
    FutexWakeAll(released_);
  }

  Job &job_;
  LaneLease lane_;
  std::vector<StagingLease> ring_;
  size_t per_seg_ = 1;  // chunks per segment (per ring buffer)
  size_t lead_ = 0;     // where segment 0 starts in its buffer
  std::unique_ptr<std::atomic<uint64_t>[]> got_;  // per chunk: bytes read, or kNotRead

  // The copier's own state.
  size_t next_ = 0;                 // first chunk not yet copied
  uint32_t issued_segments_ = 0;    // segments whose every copy is issued
  size_t last_copied_segment_ = kNone;

  std::atomic<uint32_t> progress_{0};  // chunks read, readers blocked (the copier sleeps on it)
  std::atomic<uint32_t> released_{0};  // segments whose buffer is free again
  std::atomic<bool> copier_sleeping_{false};
  std::atomic<int> readers_waiting_{0};
  std::atomic<bool> closed_{false};
};

}  // namespace

size_t PipelineChunkSize(const IoRequest &req, size_t parts, size_t limit) {
  const size_t align = req.file->align() > 1 ? req.file->align() : 4096;
  // About four chunks per participant, 256 KiB to 1 MiB.
  size_t chunk = req.size / (std::max<size_t>(parts, 1) * 4);
  chunk = std::min(std::clamp<size_t>(chunk, 256 << 10, 1 << 20), limit);
  return std::max(align, chunk / align * align);
}

void RunPipelinedRead(Job &job, CUcontext ctx, size_t parts) {
  ScopedContext scope(ctx);
  Result<LaneLease> lane = job.rt.lanes().Lease(ctx);
  if (!lane.ok()) return job.Fail(0, lane.status());
  ReadPipeline pipe(job, std::move(*lane));
  Status s = pipe.Prepare();
  if (!s.ok()) return job.Fail(0, s);
  job.rt.workers().Run(parts, [&](size_t k) {
    if (k == 0)
      pipe.Copy();
    else
      pipe.Read();
  });
}

}  // namespace ufile
