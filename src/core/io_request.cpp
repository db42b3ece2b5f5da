// SPDX-License-Identifier: Apache-2.0
#include "core/io_request.h"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <optional>

#include "base/log.h"
#include "core/runtime.h"
#include "observe/observer.h"
#include "observe/state.h"
#include "observe/trace.h"
#include "ufile/detail/device_atomics.h"

namespace ufile {
namespace {

Status Refuse(const char *fn, CUfileOpError op, const char *why) {
  UFILE_LOG_ERROR("%s: %s", fn, why);
  return Status::Op(op);
}

// The memory of [base + buf_off, + size): from the registry when base is
// registered (bounds checked against the registration), else queried.
Result<MemInfo> ResolveMemory(const char *fn, Runtime &rt, const void *base, off_t buf_off,
                              size_t size) {
  const auto addr = reinterpret_cast<uintptr_t>(base);
  if (auto reg = rt.buffers().Find(addr)) {
    if (static_cast<uint64_t>(buf_off) + size > reg->length) {
      UFILE_LOG_ERROR("%s: offset %lld + size %zu exceeds the %zu-byte registered buffer %p", fn,
                      static_cast<long long>(buf_off), size, reg->length, base);
      return Status::Op(CU_FILE_INVALID_MAPPING_RANGE);
    }
    return reg->mem;
  }
  Result<MemInfo> mem = ClassifyPointer(static_cast<const char *>(base) + buf_off);
  if (!mem.ok()) return mem;
  if (mem->needs_copy() && mem->range_size &&
      addr + static_cast<uint64_t>(buf_off) + size > mem->range_start + mem->range_size) {
    UFILE_LOG_ERROR("%s: %p + %lld + %zu leaves its %zu-byte allocation", fn, base,
                    static_cast<long long>(buf_off), size, mem->range_size);
    return Status::Op(CU_FILE_CUDA_POINTER_RANGE_ERROR);
  }
  return mem;
}

// PrepareIo after CheckIoArgs.
Result<IoRequest> PrepareChecked(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a,
                                 Access access) {
  if (access == Access::kCheck) UFILE_RETURN_IF_ERROR(CheckAccess(fn, file, a.write));
  IoRequest req;
  req.file = &file;
  req.write = a.write;
  req.file_off = a.file_off;
  if (a.size == 0) return req;
  Result<MemInfo> mem = ResolveMemory(fn, rt, a.base, a.buf_off, a.size);
  if (!mem.ok()) return mem.status();
  UFILE_RETURN_IF_ERROR(CheckMemoryAllowed(fn, rt.config(), *mem, a.base));
  req.mem = const_cast<char *>(static_cast<const char *>(a.base)) + a.buf_off;
  req.mem_info = *mem;
  req.size = a.size;
  return req;
}

trace::RangeKind RangeFor(IoOrigin origin, bool write) {
  switch (origin) {
    case IoOrigin::kSync:
      return write ? trace::RangeKind::kWrite : trace::RangeKind::kRead;
    case IoOrigin::kBatch:
      return trace::RangeKind::kBatchSubmit;
    case IoOrigin::kStream:
      return write ? trace::RangeKind::kStreamWrite : trace::RangeKind::kStreamRead;
  }
  return trace::RangeKind::kRead;
}

observe::IoSample Sample(const IoRequest &req, const Result<size_t> &r, uint64_t t0, uint64_t t1) {
  observe::IoSample io;
  io.write = req.write;
  io.ok = r.ok();
  io.size = req.size;
  io.bytes = r.ok() ? r.value() : 0;
  io.t0 = t0;
  io.t1 = t1;
  if (req.mem_info.needs_copy()) io.device = req.mem_info.device;
  const FileHandle &f = *req.file;
  const uint64_t align = f.direct() ? f.align() : 4096;
  io.posix = !f.direct();
  io.unaligned = static_cast<uint64_t>(req.file_off) % align != 0 || req.size % align != 0;
  return io;
}

}  // namespace

Status CheckIoArgs(const char *fn, const IoArgs &a) {
  if (!a.base) return Refuse(fn, CU_FILE_INVALID_VALUE, "NULL buffer");
  if (a.file_off < 0 || a.buf_off < 0) return Refuse(fn, CU_FILE_INVALID_VALUE, "negative offset");
  if (a.size > static_cast<size_t>(SSIZE_MAX) ||
      static_cast<uint64_t>(a.file_off) > static_cast<uint64_t>(LLONG_MAX) - a.size)
    return Refuse(fn, CU_FILE_INVALID_VALUE, "size + file offset overflows");
  const auto addr = reinterpret_cast<uintptr_t>(a.base);
  if (static_cast<uint64_t>(a.buf_off) > UINTPTR_MAX - addr ||
      a.size > UINTPTR_MAX - addr - static_cast<uint64_t>(a.buf_off))
    return Refuse(fn, CU_FILE_INVALID_VALUE, "buffer + offset + size overflows");
  return Status::Ok();
}

Result<std::shared_ptr<FileHandle>> LookupHandle(const char *fn, Runtime &rt, CUfileHandle_t fh) {
  std::shared_ptr<FileHandle> file = rt.handles().Lookup(fh);
  if (!file) return Refuse(fn, CU_FILE_HANDLE_NOT_REGISTERED, "not a registered handle");
  return file;
}

Status CheckAccess(const char *fn, const FileHandle &file, bool write) {
  if (!(write ? file.writable() : file.readable())) {
    UFILE_LOG_ERROR("%s: the handle was not opened for %s", fn, write ? "writing" : "reading");
    return Status::Errno(EBADF);
  }
  return file.CheckDescriptor(fn, write);
}

Status CheckMemoryAllowed(const char *fn, const Config &cfg, const MemInfo &mem, const void *p) {
  if (cfg.allow_system_memory || mem.needs_copy()) return Status::Ok();
  UFILE_LOG_ERROR("%s: %p is host memory (%s) and properties.allow_system_memory is false", fn, p,
                  MemKindName(mem.kind));
  return Status::Op(CU_FILE_CUDA_MEMORY_TYPE_INVALID);
}

Result<IoRequest> PrepareIo(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a,
                            Access access) {
  UFILE_RETURN_IF_ERROR(CheckIoArgs(fn, a));
  return PrepareChecked(fn, rt, file, a, access);
}

Result<PreparedIo> PrepareIo(const char *fn, Runtime &rt, const IoArgs &a) {
  UFILE_RETURN_IF_ERROR(CheckIoArgs(fn, a));
  Result<std::shared_ptr<FileHandle>> file = LookupHandle(fn, rt, a.fh);
  if (!file.ok()) return file.status();
  Result<IoRequest> req = PrepareChecked(fn, rt, **file, a, Access::kCheck);
  if (!req.ok()) return req.status();
  return PreparedIo{std::move(*file), *req};
}

Result<size_t> RunIo(Runtime &rt, const IoRequest &req, IoOrigin origin) {
  if (req.size == 0) return size_t{0};
  const unsigned state = observe::State();
  const int fd = req.file->user_fd();  // the caller's, for traces
  trace::IoStart(req.write, fd, req.file_off, req.size);
  std::optional<trace::Range> range;
  if (state & observe::kNvtxBit) range.emplace(RangeFor(origin, req.write), req.size);
  const bool timed = origin == IoOrigin::kSync && (state & observe::kLevelMask) != 0;
  const uint64_t t0 = timed ? devio::NowNs() : 0;
  Result<size_t> r = ExecuteIo(rt, req);
  const uint64_t t1 = timed ? devio::NowNs() : 0;
  trace::IoDone(req.write, fd, req.file_off, req.size,
                r.ok() ? static_cast<int64_t>(*r) : r.status().ToNegativeCode());
  if (timed) observe::IoDone(Sample(req, r, t0, t1));
  return r;
}

}  // namespace ufile
