// SPDX-License-Identifier: Apache-2.0
#include "core/transfer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>

#include "base/log.h"
#include "core/chunk_io.h"
#include "core/pool_share.h"
#include "core/read_pipeline.h"
#include "core/runtime.h"
#include "core/transfer_job.h"
#include "gpu/copy_wait.h"
#include "gpu/cuda_api.h"
#include "plan/planner.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

constexpr size_t kMinSplitChunk = 1 << 20;
// O_DIRECT chunks are larger: the kernel already spreads one large direct
// read or write over the device's queue, while every chunk costs a
// submission, a wake-up and a copy. Fewer, larger chunks take less CPU per
// byte and keep the disk as busy (docs/DESIGN.md).
constexpr size_t kMinDirectChunk = 4u << 20;

// Moves one chunk between the file and CPU-addressable memory at dst.
// fixed: mem's engine/ring_registry buffer slot when it is a staging buffer.
Result<size_t> HostChunk(Job &job, const Chunk &c, char *mem, int fixed) {
  Engine &e = job.rt.engine();
  return job.req.write ? WriteChunk(e, *job.req.file, c, mem, fixed)
                       : ReadChunk(e, *job.req.file, c, mem, fixed);
}

// Copies between a bounce buffer and the caller's memory, which may be a wild
// pointer: EFAULT is logged and returned, as pread would, instead of a crash.
Status CopyCaller(void *dst, const void *src, size_t n) {
  const int rc = SysOps::Current().CopyCallerMemory(dst, src, n);
  if (rc == 0) return Status::Ok();
  UFILE_LOG_ERROR("copying %zu bytes between %p and %p (the caller's buffer): %s", n, dst, src,
                  std::strerror(-rc));
  return Status::Errno(-rc);
}

// Chunk c through the aligned bounce buffer (leased on first use) and the
// caller's memory at mem.
Result<size_t> Bounced(Job &job, const Chunk &c, char *mem, StagingLease &bounce) {
  if (!bounce) {
    Result<StagingLease> l = job.rt.staging().Lease(job.lease_size);
    if (!l.ok()) return l.status();
    bounce = std::move(*l);
  }
  Status copied = job.req.write ? CopyCaller(bounce.data(), mem, c.len) : Status::Ok();
  if (!copied.ok()) return copied;
  Result<size_t> r = HostChunk(job, c, static_cast<char *>(bounce.data()), bounce.fixed());
  if (r.ok() && !job.req.write) copied = CopyCaller(mem, bounce.data(), *r);
  if (!copied.ok()) return copied;
  return r;
}

// A direct read chunk at an unaligned host address: what the page cache
// holds goes straight into the caller's memory (the buffered descriptor needs
// no alignment; a bounce would copy every byte twice), the rest, from the
// last aligned byte taken, through the bounce buffer.
Result<size_t> CachedThenBounced(Job &job, const Chunk &c, char *mem, StagingLease &bounce) {
  Chunk rest;
  const size_t keep = ReadCachedPrefix(job.rt.engine(), *job.req.file, c, mem, &rest);
  if (keep == c.len) return keep;
  Result<size_t> r = Bounced(job, rest, mem + keep, bounce);
  if (!r.ok()) return r;
  return keep + *r;
}

// Participant for CPU-addressable memory: direct file I/O, through an aligned
// bounce buffer only for O_DIRECT chunks at unaligned host addresses (and
// for reads, only what the page cache does not hold).
void RunHost(Job &job) {
  StagingLease bounce;
  size_t i;
  while (job.Claim(&i)) {
    const Chunk c = job.plan.at(i);
    char *mem = job.req.mem + c.buf_off;
    Result<size_t> r = 0;
    if (!c.staged)
      r = HostChunk(job, c, mem, kNoFixedSlot);
    else if (c.cache_first && !job.req.write)
      r = CachedThenBounced(job, c, mem, bounce);
    else
      r = Bounced(job, c, mem, bounce);
    if (!r.ok()) return job.Fail(i, r.status());
    if (*r < c.len) job.EndOfFile(i, *r);
  }
}

// Double-buffered staging for GPU memory: two pinned buffers (one when the
// pool is short, or when the participant moves a single chunk) and one copy
// stream; the copy of one chunk overlaps the file I/O of the next.
class DeviceParticipant {
 public:
  DeviceParticipant(Job &job, LaneLease lane)
      : job_(job), lane_(std::move(lane)) {}
  ~DeviceParticipant() { Drain(); }

  void Run() {
    Result<StagingLease> first = job_.rt.staging().Lease(job_.lease_size);
    size_t i = kNone;
    if (!first.ok()) {
      if (job_.Claim(&i)) job_.Fail(i, first.status());
      return;
    }
    buf_[0] = std::move(*first);
    job_.req.write ? RunWrite() : RunRead();
  }

 private:
  CUdeviceptr DevPtr(const Chunk &c) const {
    return reinterpret_cast<CUdeviceptr>(job_.req.mem) + c.buf_off;
  }

  // Leases the second buffer, once. Called only when a second chunk was or
  // may be claimed: most participants of a split request, and every small
  // request, move one chunk, and a second lease would cost a trip to the
  // pool's shared list for nothing.
  void LeaseSecond() {
    if (second_tried_) return;
    second_tried_ = true;
    Result<StagingLease> l = job_.rt.staging().TryLease(job_.lease_size);
    if (l.ok()) buf_[1] = std::move(*l);
  }

  // The slot after s (s itself with one buffer).
  int Other(int s) const { return buf_[1] ? 1 - s : 0; }

  // Waits for the copy last issued from slot s.
  bool Wait(int s) {
    if (chunk_[s] == kNone) return true;
    const CUevent ev = lane_->done[s];
    CUresult res = job_.sleep_on_copies ? SleepUntilCopied(ev, bytes_[s])
                                        : Cuda().cuEventSynchronize(ev);
    const size_t i = chunk_[s];
    chunk_[s] = kNone;
    uncovered_ |= res != CUDA_SUCCESS;  // the copy may still run
    if (res != CUDA_SUCCESS) job_.FailCopy(i, "waiting for a staging copy", res);
    return res == CUDA_SUCCESS;
  }

  // Records slot s's event after the copy of chunk i (bytes) was enqueued
  // (res).
  bool Record(int s, size_t i, size_t bytes, CUresult res, const char *what) {
    if (res == CUDA_SUCCESS) {
      res = Cuda().cuEventRecord(lane_->done[s], lane_->stream);
      uncovered_ |= res != CUDA_SUCCESS;  // a copy runs that no event follows
    }
    if (res != CUDA_SUCCESS) {
      job_.FailCopy(i, what, res);
      return false;
    }
    chunk_[s] = i;
    bytes_[s] = bytes;
    return true;
  }

  void RunRead() {
    CudaApi &api = Cuda();
    int s = 0;
    bool first = true;
    size_t i;
    while (job_.Claim(&i)) {
      if (!first) {
        LeaseSecond();  // even when i is the request's last chunk: its read overlaps a copy
        s = Other(s);
      }
      first = false;
      if (!Wait(s)) return;
      const Chunk c = job_.plan.at(i);
      Result<size_t> r =
          ReadChunk(job_.rt.engine(), *job_.req.file, c, buf_[s].data(), buf_[s].fixed());
      if (!r.ok()) return job_.Fail(i, r.status());
      if (*r < c.len) job_.EndOfFile(i, *r);
      if (*r > 0) {
        CUresult res = api.cuMemcpyHtoDAsync(DevPtr(c), buf_[s].data(), *r, lane_->stream);
        if (!Record(s, i, *r, res, "cuMemcpyHtoDAsync")) return;
      }
    }
  }

  // Starts the device-to-host copy of the next claimed chunk into slot s.
  bool Prefetch(int s) {
    size_t i;
    if (!job_.Claim(&i)) return false;
    const Chunk c = job_.plan.at(i);
    pending_[s] = c;
    CUresult res =
        Cuda().cuMemcpyDtoHAsync(buf_[s].data(), DevPtr(c), c.len, lane_->stream);
    return Record(s, i, c.len, res, "cuMemcpyDtoHAsync");
  }

  void RunWrite() {
    int s = 0;
    if (!Prefetch(0)) return;
    for (;;) {
      if (job_.unclaimed()) LeaseSecond();
      const int other = Other(s);
      const bool more = other != s && Prefetch(other);
      const size_t i = chunk_[s];
      if (!Wait(s)) return;
      Result<size_t> r = WriteChunk(job_.rt.engine(), *job_.req.file, pending_[s], buf_[s].data(),
                                    buf_[s].fixed());
      if (!r.ok()) return job_.Fail(i, r.status());
      if (other == s) {
        if (!Prefetch(s)) return;
        continue;
      }
      if (!more) return;
      s = other;
    }
  }

  // No staging buffer goes back to the pool while a copy may still use it,
  // and the last copies' errors are not lost. Every enqueued copy is
  // followed by its slot's event, so waiting for both suffices; the stream
  // is synchronised only when an event could not be recorded or its wait
  // failed.
  void Drain() {
    Wait(0);
    Wait(1);
    if (uncovered_) Cuda().cuStreamSynchronize(lane_->stream);
  }

  Job &job_;
  LaneLease lane_;
  StagingLease buf_[2];
  size_t chunk_[2] = {kNone, kNone};
  size_t bytes_[2] = {0, 0};  // of the copy last issued from each slot
  Chunk pending_[2];
  bool second_tried_ = false;
  bool uncovered_ = false;  // a copy was issued that no successful wait covers
};

void RunDevice(Job &job, CUcontext ctx) {
  ScopedContext scope(ctx);
  Result<LaneLease> lane = job.rt.lanes().Lease(ctx);
  if (!lane.ok()) {
    size_t i;
    if (job.Claim(&i)) job.Fail(i, lane.status());
    return;
  }
  DeviceParticipant(job, std::move(*lane)).Run();
}

// The largest chunk: max_direct_io_size, and a staged chunk fits a staging
// buffer.
size_t ChunkLimit(Runtime &rt, bool staged) {
  size_t limit = rt.props().max_direct_io_kb.load() * 1024;
  if (staged) limit = std::min(limit, rt.staging().largest());
  return limit;
}

// The chunk size: one request is spread over its share of the participants,
// but never in chunks smaller than 1 MiB (4 MiB for O_DIRECT), never larger
// than ChunkLimit.
size_t ChunkSize(Runtime &rt, const IoRequest &req, bool staged, bool direct, size_t parts) {
  const size_t align = req.file->align() > 1 ? req.file->align() : 4096;
  const size_t limit = ChunkLimit(rt, staged);
  size_t chunk = limit;
  const size_t min_chunk = direct ? kMinDirectChunk : kMinSplitChunk;
  if (parts > 1) chunk = std::min(limit, std::max(min_chunk, (req.size + parts - 1) / parts));
  return std::max(align, chunk / align * align);
}

// Reads into GPU memory from 32 MiB to under 512 MiB go through the pipeline
// (core/read_pipeline): in that range it moves bytes as fast as the double
// buffering below or faster, with less CPU. Below it, its fixed costs and
// 256 KiB reads do not pay off; above it, its one copy stream is less steady
// than the double buffering's many (docs/DESIGN.md).
constexpr size_t kPipelineMinBytes = 32u << 20;
constexpr size_t kPipelineMaxBytes = 512u << 20;

// Only a request that had the pool to itself when it started: with other
// split requests running, its share of helpers double-buffers instead, which
// moves concurrent callers' bytes faster. Not O_DIRECT reads from the disk:
// they wait on it, not on the copies, and the double buffering's 4 MiB chunks
// and sleeping waits move them as fast with less CPU.
bool Pipelined(const IoRequest &req, bool needs_copy, bool direct, const PoolShare &share) {
  return needs_copy && !direct && !req.write && req.size >= kPipelineMinBytes &&
         req.size < kPipelineMaxBytes && share.parts() > 1 && share.alone();
}

// Whether the request may be spread over helpers at all. Buffered writes to
// one file run one at a time under its inode lock (ext4, XFS, btrfs), so
// helpers would only spin on it: one participant, whose double buffering
// overlaps its GPU copies with its writes, is as fast as many, with a
// fraction of their CPU.
bool Splittable(Runtime &rt, const IoRequest &req, bool direct) {
  if (req.size < rt.min_split_bytes()) return false;
  return !req.write || direct || req.file->is_fs_ops();
}

}  // namespace

Result<size_t> ExecuteIo(Runtime &rt, const IoRequest &req) {
  if (req.size == 0) return size_t{0};
  const bool needs_copy = req.mem_info.needs_copy();
  const bool direct = req.file->direct() && !req.file->is_fs_ops();
  const PoolShare share(rt.split_requests(), rt.request_parallelism(),
                        Splittable(rt, req, direct));
  // An O_DIRECT read of a page-cache-resident range is moved as a buffered
  // one (chunk sizes, pipeline, spinning on copies): its chunks come from the
  // page cache (core/chunk_io.h), and only their fallbacks wait on the disk.
  const bool cache_first = direct && !req.write && rt.config().page_cache_reads;
  const bool hot = cache_first && req.size >= kMinSplitChunk &&
                   LooksResident(*req.file, req.file_off, req.size);
  const bool disk = direct && !hot;
  PlanInput in;
  in.size = req.size;
  in.file_off = req.file_off;
  in.fd_direct = direct;
  in.align = req.file->align();
  in.needs_copy = needs_copy;
  in.mem_addr = reinterpret_cast<uintptr_t>(req.mem);
  in.cache_first = cache_first;
  in.hot = hot;
  const bool pipelined = Pipelined(req, needs_copy, disk, share);
  in.chunk_size = pipelined ? PipelineChunkSize(req, share.parts(), ChunkLimit(rt, true))
                            : ChunkSize(rt, req, needs_copy || direct, disk, share.parts());
  Job job(rt, req, in);
  job.chunk_size = in.chunk_size;
  job.lease_size = std::min(in.chunk_size, (req.size + 4095) / 4096 * 4096);
  // O_DIRECT chunks wait on storage, so a participant sleeps on its staging
  // copies instead of spinning: its time goes to the disk, and a spin on the
  // copies would only burn CPU (gpu/copy_wait.h says how it sleeps).
  job.sleep_on_copies = disk;

  CUcontext ctx = nullptr;
  if (needs_copy) {
    Result<CUcontext> c = rt.contexts().ContextFor(req.mem_info);
    if (!c.ok()) return c.status();
    ctx = *c;
  }
  const size_t parts = std::min(share.parts(), job.plan.count());
  if (pipelined && parts > 1) {
    RunPipelinedRead(job, ctx, parts);
    return job.Outcome();
  }
  rt.workers().Run(parts, [&](size_t) {
    if (needs_copy)
      RunDevice(job, ctx);
    else
      RunHost(job);
  });
  return job.Outcome();
}

}  // namespace ufile
