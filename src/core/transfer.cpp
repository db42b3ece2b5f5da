// SPDX-License-Identifier: Apache-2.0
#include "core/transfer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <mutex>

#include "core/chunk_io.h"
#include "core/log.h"
#include "core/runtime.h"
#include "gpu/cuda_api.h"
#include "plan/planner.h"

namespace ufile {
namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();
constexpr size_t kMinSplitChunk = 1 << 20;

// State shared by the participants of one request.
class Job {
 public:
  Job(Runtime &runtime, const IoRequest &request, const PlanInput &in)
      : rt(runtime), req(request), plan(in) {}

  // Claims the next chunk in file order; false when none is left or the
  // request has failed. Chunks past end of file are not worth reading.
  bool Claim(size_t *i) {
    if (failed_.load(std::memory_order_relaxed)) return false;
    *i = next_.fetch_add(1, std::memory_order_relaxed);
    return *i < plan.count() && *i <= eof_chunk_.load(std::memory_order_relaxed);
  }
  void Fail(size_t i, const Status &s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < error_chunk_) {
      error_chunk_ = i;
      error_ = s;
    }
    failed_ = true;
  }
  // Chunk i moved only n of its bytes: the file ends there.
  void EndOfFile(size_t i, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < eof_chunk_.load()) {
      eof_chunk_ = i;
      eof_bytes_ = n;
    }
  }
  Result<size_t> Outcome() const {
    if (error_chunk_ != kNone) return error_;
    const size_t eof = eof_chunk_.load();
    if (eof == kNone) return req.size;
    return plan.start_of(eof) + eof_bytes_;
  }

  Runtime &rt;
  const IoRequest &req;
  const Plan plan;
  size_t chunk_size = 0;
  size_t lease_size = 0;  // staging buffer size: a chunk, or less for small requests

 private:
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::atomic<size_t> eof_chunk_{kNone};
  std::mutex mu_;
  size_t error_chunk_ = kNone;  // guarded by mu_
  Status error_;                // guarded by mu_
  size_t eof_bytes_ = 0;        // guarded by mu_
};

// Moves one chunk between the file and CPU-addressable memory at dst.
Result<size_t> HostChunk(Job &job, const Chunk &c, char *mem) {
  Engine &e = job.rt.engine();
  return job.req.write ? WriteChunk(e, *job.req.file, c, mem) : ReadChunk(e, *job.req.file, c, mem);
}

// Participant for CPU-addressable memory: direct file I/O, through an aligned
// bounce buffer only for O_DIRECT chunks at unaligned host addresses.
void RunHost(Job &job) {
  StagingLease bounce;
  size_t i;
  while (job.Claim(&i)) {
    const Chunk c = job.plan.at(i);
    char *mem = job.req.mem + c.buf_off;
    Result<size_t> r = 0;
    if (!c.staged) {
      r = HostChunk(job, c, mem);
    } else {
      if (!bounce) {
        Result<StagingLease> l = job.rt.staging().Lease(job.lease_size);
        if (!l.ok()) return job.Fail(i, l.status());
        bounce = std::move(*l);
      }
      if (job.req.write) std::memcpy(bounce.data(), mem, c.len);
      r = HostChunk(job, c, static_cast<char *>(bounce.data()));
      if (r.ok() && !job.req.write) std::memcpy(mem, bounce.data(), *r);
    }
    if (!r.ok()) return job.Fail(i, r.status());
    if (*r < c.len) job.EndOfFile(i, *r);
  }
}

Status CopyError(const char *what, CUresult res) {
  UFILE_LOG_ERROR("%s failed: %s", what, CudaErrorString(res).c_str());
  return Status::Cuda(res);
}

// Double-buffered staging for GPU memory: two pinned buffers (one when the
// pool is short) and one copy stream; the copy of one chunk overlaps the
// file I/O of the next.
class DeviceParticipant {
 public:
  DeviceParticipant(Job &job, LaneLease lane) : job_(job), lane_(std::move(lane)) {}
  ~DeviceParticipant() { Drain(); }

  void Run() {
    Result<StagingLease> first = job_.rt.staging().Lease(job_.lease_size);
    size_t i = kNone;
    if (!first.ok()) {
      if (job_.Claim(&i)) job_.Fail(i, first.status());
      return;
    }
    buf_[0] = std::move(*first);
    Result<StagingLease> second = job_.rt.staging().TryLease(job_.lease_size);
    if (second.ok()) buf_[1] = std::move(*second);
    job_.req.write ? RunWrite() : RunRead();
  }

 private:
  CUdeviceptr DevPtr(const Chunk &c) const {
    return reinterpret_cast<CUdeviceptr>(job_.req.mem) + c.buf_off;
  }
  int Slots() const { return buf_[1] ? 2 : 1; }

  // Waits for the copy last issued from slot s.
  bool Wait(int s) {
    if (chunk_[s] == kNone) return true;
    CUresult res = Cuda().cuEventSynchronize(lane_->done[s]);
    const size_t i = chunk_[s];
    chunk_[s] = kNone;
    if (res != CUDA_SUCCESS) job_.Fail(i, CopyError("waiting for a staging copy", res));
    return res == CUDA_SUCCESS;
  }

  bool Record(int s, size_t i, CUresult res, const char *what) {
    if (res == CUDA_SUCCESS) res = Cuda().cuEventRecord(lane_->done[s], lane_->stream);
    if (res != CUDA_SUCCESS) {
      job_.Fail(i, CopyError(what, res));
      return false;
    }
    chunk_[s] = i;
    return true;
  }

  void RunRead() {
    CudaApi &api = Cuda();
    int s = 0;
    size_t i;
    while (job_.Claim(&i)) {
      if (!Wait(s)) return;
      const Chunk c = job_.plan.at(i);
      Result<size_t> r = ReadChunk(job_.rt.engine(), *job_.req.file, c, buf_[s].data());
      if (!r.ok()) return job_.Fail(i, r.status());
      if (*r < c.len) job_.EndOfFile(i, *r);
      if (*r > 0) {
        CUresult res = api.cuMemcpyHtoDAsync(DevPtr(c), buf_[s].data(), *r, lane_->stream);
        if (!Record(s, i, res, "cuMemcpyHtoDAsync")) return;
      }
      s = (s + 1) % Slots();
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
    return Record(s, i, res, "cuMemcpyDtoHAsync");
  }

  void RunWrite() {
    int s = 0;
    if (!Prefetch(0)) return;
    for (;;) {
      const int other = (s + 1) % Slots();
      const bool more = other != s && Prefetch(other);
      const size_t i = chunk_[s];
      if (!Wait(s)) return;
      Result<size_t> r = WriteChunk(job_.rt.engine(), *job_.req.file, pending_[s], buf_[s].data());
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
  // and the last copies' errors are not lost.
  void Drain() {
    Wait(0);
    Wait(1);
    if (lane_->stream) Cuda().cuStreamSynchronize(lane_->stream);
  }

  Job &job_;
  LaneLease lane_;
  StagingLease buf_[2];
  size_t chunk_[2] = {kNone, kNone};
  Chunk pending_[2];
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

// The chunk size: one request is spread over the participants, but never in
// chunks smaller than 1 MiB, never larger than max_direct_io_size, and a
// staged chunk fits a staging buffer.
size_t ChunkSize(Runtime &rt, const IoRequest &req, bool staged) {
  const size_t align = req.file->align() > 1 ? req.file->align() : 4096;
  size_t limit = rt.props().max_direct_io_kb.load() * 1024;
  if (staged) limit = std::min(limit, rt.staging().largest());
  size_t chunk = limit;
  const size_t parts = rt.request_parallelism();
  if (req.size >= rt.min_split_bytes() && parts > 1)
    chunk = std::min(limit, std::max(kMinSplitChunk, (req.size + parts - 1) / parts));
  return std::max(align, chunk / align * align);
}

}  // namespace

Result<size_t> ExecuteIo(Runtime &rt, const IoRequest &req) {
  if (req.size == 0) return size_t{0};
  const bool needs_copy = req.mem_info.needs_copy();
  const bool direct = req.file->direct() && !req.file->is_fs_ops();
  PlanInput in;
  in.size = req.size;
  in.file_off = req.file_off;
  in.fd_direct = direct;
  in.align = req.file->align();
  in.needs_copy = needs_copy;
  in.mem_addr = reinterpret_cast<uintptr_t>(req.mem);
  in.chunk_size = ChunkSize(rt, req, needs_copy || direct);
  Job job(rt, req, in);
  job.chunk_size = in.chunk_size;
  job.lease_size = std::min(in.chunk_size, (req.size + 4095) / 4096 * 4096);

  CUcontext ctx = nullptr;
  if (needs_copy) {
    Result<CUcontext> c = rt.contexts().ContextFor(req.mem_info);
    if (!c.ok()) return c.status();
    ctx = *c;
  }
  const size_t parts = req.size < rt.min_split_bytes()
                           ? 1
                           : std::min(rt.request_parallelism(), job.plan.count());
  rt.workers().Run(parts, [&](size_t) {
    if (needs_copy)
      RunDevice(job, ctx);
    else
      RunHost(job);
  });
  return job.Outcome();
}

}  // namespace ufile
