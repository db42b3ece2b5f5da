// SPDX-License-Identifier: Apache-2.0
#include "async/stream_ops.h"

#include <atomic>
#include <climits>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "async/flag_pool.h"
#include "async/stream_backend.h"
#include "async/stream_executor.h"
#include "async/stream_watcher.h"
#include "base/log.h"
#include "core/driver.h"
#include "core/io_request.h"
#include "core/runtime.h"
#include "core/transfer.h"
#include "gpu/cuda_api.h"

namespace ufile {
namespace {

constexpr unsigned kAllFlags = CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET |
                               CU_FILE_STREAM_FIXED_FILE_SIZE | CU_FILE_STREAM_PAGE_ALIGNED_INPUTS;
constexpr uint64_t kPageAlign = 4096;

Status Refuse(const char *fn, const char *why) {
  UFILE_LOG_ERROR("%s: %s", fn, why);
  return Status::Op(CU_FILE_INVALID_VALUE);
}

// Registered streams by handle value (never dereferenced by us).
struct StreamTable {
  std::mutex mu;
  std::unordered_map<CUstream, unsigned> flags;  // guarded by mu
};
StreamTable &Streams() {
  static StreamTable *table = new StreamTable();  // never destroyed, like Driver
  return *table;
}

// The context of a user stream; the stream must be one CUDA accepts.
Result<CUcontext> StreamContext(const char *fn, CUstream stream) {
  StreamBackend &gpu = StreamBackend::Current();
  std::string why;
  if (!gpu.Usable(&why)) {
    UFILE_LOG_ERROR("%s: stream %p given, but %s", fn, static_cast<void *>(stream), why.c_str());
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  CUcontext ctx = nullptr;
  CUresult res = gpu.Context(stream, &ctx);
  if (res != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("%s: %p is not a usable stream: cuStreamGetCtx: %s", fn,
                    static_cast<void *>(stream), CudaErrorString(res).c_str());
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  return ctx;
}

// Parameters a registration fixed, read at submission.
struct Fixed {
  size_t size = 0;
  off_t file_off = 0;
  off_t buf_off = 0;
};

Status CheckAligned(const char *fn, unsigned flags, size_t size, off_t file_off, off_t buf_off) {
  if (!(flags & CU_FILE_STREAM_PAGE_ALIGNED_INPUTS)) return Status::Ok();
  if (size % kPageAlign || static_cast<uint64_t>(file_off) % kPageAlign ||
      static_cast<uint64_t>(buf_off) % kPageAlign) {
    UFILE_LOG_ERROR(
        "%s: stream registered with CU_FILE_STREAM_PAGE_ALIGNED_INPUTS, but size %zu, "
        "file offset %lld or buffer offset %lld is not a multiple of 4096",
        fn, size, static_cast<long long>(file_off), static_cast<long long>(buf_off));
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  return Status::Ok();
}

// Reads and checks the fixed parameters (a value that is not fixed is 0 here
// and checked when the stream reaches the operation).
Status CaptureFixed(const StreamIoArgs &a, unsigned flags, Fixed *f) {
  if (flags & CU_FILE_STREAM_FIXED_FILE_SIZE) f->size = *a.size_p;
  if (flags & CU_FILE_STREAM_FIXED_FILE_OFFSET) f->file_off = *a.file_off_p;
  if (flags & CU_FILE_STREAM_FIXED_BUF_OFFSET) f->buf_off = *a.buf_off_p;
  if (f->size > static_cast<size_t>(SSIZE_MAX)) return Refuse(a.fn, "fixed size too large");
  if (f->file_off < 0 || f->buf_off < 0) return Refuse(a.fn, "negative fixed offset");
  return CheckAligned(a.fn, flags, f->size, f->file_off, f->buf_off);
}

// The I/O's arguments as of now: fixed ones from f, the others read.
IoArgs ArgsNow(const StreamIoArgs &a, unsigned flags, const Fixed &f) {
  IoArgs io;
  io.fh = a.fh;
  io.base = a.base;
  io.write = a.write;
  io.size = (flags & CU_FILE_STREAM_FIXED_FILE_SIZE) ? f.size : *a.size_p;
  io.file_off = (flags & CU_FILE_STREAM_FIXED_FILE_OFFSET) ? f.file_off : *a.file_off_p;
  io.buf_off = (flags & CU_FILE_STREAM_FIXED_BUF_OFFSET) ? f.buf_off : *a.buf_off_p;
  return io;
}

// The request as of now (once the stream has reached the operation), checked
// as cuFileRead/Write checks it, after the page-alignment promise. access:
// kChecked when submission checked it just before on this thread.
Result<IoRequest> PrepareNow(const StreamIoArgs &a, unsigned flags, const Fixed &f, Runtime &rt,
                             FileHandle &file, Access access) {
  const IoArgs io = ArgsNow(a, flags, f);
  UFILE_RETURN_IF_ERROR(CheckAligned(a.fn, flags, io.size, io.file_off, io.buf_off));
  return PrepareIo(a.fn, rt, file, io, access);
}

// One enqueued operation. Its flag slot holds two words: go (host -> GPU,
// the stream waits for 1) and reach (GPU -> host: 1 when the stream reaches
// the operation, 2 when it has passed the wait). Two references: the worker
// path and the retire path; the last one frees the slot (unless leaked) and
// deletes, which drops the driver guard.
struct StreamOp {
  StreamIoArgs args;
  unsigned flags = 0;
  Fixed fixed;
  Driver::OpGuard guard;
  std::shared_ptr<FileHandle> file;
  uint32_t *slot = nullptr;
  std::atomic<int> refs{2};
  bool abandoned = false;      // the wait could not be enqueued: no I/O
  bool leak_slot = false;      // no "passed" marker: a wait may watch the slot forever
  bool slot_released = false;  // by the retire path
};

uint32_t *Go(StreamOp *op) {
  return op->slot;
}
uint32_t *Reach(StreamOp *op) {
  return op->slot + 1;
}

void Drop(StreamOp *op) {
  if (op->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!op->leak_slot && !op->slot_released) FlagPool::Get().Release(op->slot);
  delete op;
}

// Publishes the result, then lets the stream go.
void Complete(StreamOp *op, ssize_t result) {
  *op->args.bytes_p = result;
  op->file.reset();
  std::atomic_ref<uint32_t>(*Go(op)).store(1, std::memory_order_release);
  Drop(op);
  StreamWatcher::Get().Kick();  // the stream moves on now: watch closely
}

// On a stream executor thread, once the stream has reached the operation.
void RunOp(StreamOp *op) noexcept {
  ssize_t result = 0;
  try {
    Runtime &rt = op->guard.runtime();
    // The descriptor may have changed since submission: checked again.
    Result<IoRequest> req =
        PrepareNow(op->args, op->flags, op->fixed, rt, *op->file, Access::kCheck);
    Result<size_t> r = req.ok() ? RunIo(rt, *req, IoOrigin::kStream) : req.status();
    result = r.ok() ? static_cast<ssize_t>(*r) : r.status().ToStreamReturn();
  } catch (const std::exception &e) {
    UFILE_LOG_ERROR("%s: internal error: %s", op->args.fn, e.what());
    result = -static_cast<ssize_t>(CU_FILE_INTERNAL_ERROR);
  }
  Complete(op, result);
}

// Watcher thread: the stream has reached the operation (all earlier work on
// it is complete). Posts the I/O; returns whether to wait for "passed".
bool OnReached(void *data) noexcept {
  auto *op = static_cast<StreamOp *>(data);
  if (op->abandoned) {  // the GPU has written its last word to the slot
    Drop(op);
    return false;
  }
  const bool marker = !op->leak_slot;  // read before the worker may delete op
  try {
    // Not on a pool thread: the I/O spreads over the pool like a
    // synchronous call's (async/stream_executor.h).
    StreamExecutor::Get().Run([op] { RunOp(op); });
  } catch (...) {
    Complete(op, -static_cast<ssize_t>(CU_FILE_INTERNAL_ERROR));
  }
  return marker;
}

// Watcher thread: the stream has passed the wait, so the worker has set go
// and the GPU will not touch the slot again.
void OnPassed(void *data) noexcept {
  auto *op = static_cast<StreamOp *>(data);
  FlagPool::Get().Release(op->slot);
  op->slot_released = true;
  Drop(op);
}

Status CudaFailure(const char *fn, const char *what, CUresult res) {
  UFILE_LOG_ERROR("%s: %s failed: %s", fn, what, CudaErrorString(res).c_str());
  return Status::Cuda(res);
}

void WatchOp(StreamOp *op) {
  StreamWatcher::Get().Watch(Reach(op), OnReached, OnPassed, op);
}

// Three stream memory operations: reach = 1; wait go == 1; reach = 2.
Status Enqueue(StreamOp *op, CUstream stream) {
  StreamBackend &gpu = StreamBackend::Current();
  const char *fn = op->args.fn;
  CUresult res = gpu.WriteValue(stream, Reach(op), 1);
  if (res != CUDA_SUCCESS) {
    op->refs.store(1, std::memory_order_relaxed);  // nothing in the stream
    Drop(op);
    return CudaFailure(fn, "cuStreamWriteValue32", res);
  }
  res = gpu.WaitValue(stream, Go(op), 1);
  if (res != CUDA_SUCCESS) {
    op->abandoned = true;  // retired once the GPU has written reach
    op->refs.store(1, std::memory_order_relaxed);
    WatchOp(op);
    return CudaFailure(fn, "cuStreamWaitValue32", res);
  }
  res = gpu.WriteValue(stream, Reach(op), 2);
  if (res != CUDA_SUCCESS) {
    op->leak_slot = true;  // the I/O still runs (the stream waits for it); the slot is never reused
    op->refs.store(1, std::memory_order_relaxed);
    WatchOp(op);
    return CudaFailure(fn, "cuStreamWriteValue32 (passed)", res);
  }
  WatchOp(op);
  return Status::Ok();
}

// The synchronous path: the stream's earlier work first, then the I/O on
// this thread. Refusals are returned (and stored in *bytes_p); I/O errors
// only stored.
Status RunNow(const StreamIoArgs &a, unsigned flags, const Fixed &f, Runtime &rt,
              FileHandle &file) {
  CudaApi &api = Cuda();
  CUstream stream = a.stream;
  CUcontext current = nullptr;
  // The NULL stream orders against the legacy default stream when a context
  // is current (a kernel there may produce what a write sends).
  const bool sync = stream || (api.available && api.cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
                               current != nullptr);
  if (sync) {
    CUresult res = StreamBackend::Current().Synchronize(stream);
    if (res != CUDA_SUCCESS) return CudaFailure(a.fn, "cuStreamSynchronize", res);
  }
  // The wait may be long and the descriptor may change during it: checked
  // again after one, as an enqueued operation checks when it runs.
  const Access access = sync ? Access::kCheck : Access::kChecked;
  Result<IoRequest> req = PrepareNow(a, flags, f, rt, file, access);
  if (!req.ok()) {
    *a.bytes_p = req.status().ToStreamReturn();
    return req.status();
  }
  Result<size_t> r = RunIo(rt, *req, IoOrigin::kStream);
  *a.bytes_p = r.ok() ? static_cast<ssize_t>(*r) : r.status().ToStreamReturn();
  return Status::Ok();
}

Status CheckPointers(const StreamIoArgs &a) {
  if (!a.base) return Refuse(a.fn, "NULL buffer");
  if (!a.size_p) return Refuse(a.fn, "NULL size_p");
  if (!a.file_off_p) return Refuse(a.fn, "NULL file_offset_p");
  if (!a.buf_off_p) return Refuse(a.fn, "NULL bufPtr_offset_p");
  if (!a.bytes_p) return Refuse(a.fn, "NULL bytes pointer");
  return Status::Ok();
}

}  // namespace

static Status SubmitChecked(const StreamIoArgs &a) {
  const unsigned flags = StreamFlags(a.stream);
  Fixed fixed;
  UFILE_RETURN_IF_ERROR(CaptureFixed(a, flags, &fixed));
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return g.status();
  Runtime &rt = g->runtime();
  Result<std::shared_ptr<FileHandle>> file = LookupHandle(a.fn, rt, a.fh);
  if (!file.ok()) return file.status();
  UFILE_RETURN_IF_ERROR(CheckAccess(a.fn, **file, a.write));
  if (!a.stream) return RunNow(a, flags, fixed, rt, **file);

  Result<CUcontext> ctx = StreamContext(a.fn, a.stream);
  if (!ctx.ok()) return ctx.status();
  ScopedContext scope(*ctx);
  if (StreamBackend::Current().Capturing(a.stream))
    return Refuse(a.fn, "the stream is capturing a CUDA graph");
  if (rt.config().stream_memops_bypass) return RunNow(a, flags, fixed, rt, **file);
  Result<uint32_t *> slot =
      FlagPool::Get().Acquire(rt, StreamBackend::Current().NeedsPinnedFlags());
  if (!slot.ok()) return RunNow(a, flags, fixed, rt, **file);

  auto *op = new StreamOp();
  op->args = a;
  op->flags = flags;
  op->fixed = fixed;
  op->guard = std::move(*g);
  op->file = std::move(*file);
  op->slot = *slot;
  return Enqueue(op, a.stream);
}

Status RegisterStream(CUstream stream, unsigned flags) {
  constexpr const char *fn = "cuFileStreamRegister";
  if (flags & ~kAllFlags) {
    UFILE_LOG_ERROR("%s: unknown flags 0x%x (known: 0x%x)", fn, flags, kAllFlags);
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  if (stream) {
    Result<CUcontext> ctx = StreamContext(fn, stream);
    if (!ctx.ok()) return ctx.status();
  }
  StreamTable &t = Streams();
  std::lock_guard<std::mutex> lock(t.mu);
  // NVIDIA's library refuses a second registration (libcufile 1.15, also for
  // the NULL stream); its flags stay those of the first.
  if (!t.flags.emplace(stream, flags).second) {
    UFILE_LOG_ERROR("%s: stream %p is already registered (deregister it first)", fn,
                    static_cast<void *>(stream));
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  return Status::Ok();
}

Status DeregisterStream(CUstream stream) {
  StreamTable &t = Streams();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.flags.erase(stream) == 0) {
    UFILE_LOG_ERROR("cuFileStreamDeregister: stream %p is not registered",
                    static_cast<void *>(stream));
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  return Status::Ok();
}

unsigned StreamFlags(CUstream stream) {
  StreamTable &t = Streams();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.flags.find(stream);
  return it == t.flags.end() ? 0 : it->second;
}

// The NULL stream is synchronous: *bytes_p gets every refusal, those found
// before RunNow (handle, access, driver state) as well as its own.
Status SubmitStreamIo(const StreamIoArgs &a) {
  UFILE_RETURN_IF_ERROR(CheckPointers(a));
  Status s = SubmitChecked(a);
  if (!s.ok() && !a.stream) *a.bytes_p = s.ToStreamReturn();
  return s;
}

}  // namespace ufile
