// SPDX-License-Identifier: Apache-2.0
// cuFileRead / cuFileWrite: validate, resolve the memory, run the transfer.
#include <cerrno>
#include <climits>
#include <cstdint>

#include "api/api_util.h"
#include "core/runtime.h"
#include "core/transfer.h"

using namespace ufile;

namespace {

ssize_t Refuse(const char *fn, CUfileOpError op, const char *why) {
  UFILE_LOG_ERROR("%s: %s", fn, why);
  return -static_cast<ssize_t>(op);
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

ssize_t DoIo(const char *fn, CUfileHandle_t fh, const void *base, size_t size, off_t file_off,
             off_t buf_off, bool write) {
  if (!base) return Refuse(fn, CU_FILE_INVALID_VALUE, "NULL buffer");
  if (file_off < 0 || buf_off < 0) return Refuse(fn, CU_FILE_INVALID_VALUE, "negative offset");
  if (size > static_cast<size_t>(SSIZE_MAX) ||
      static_cast<uint64_t>(file_off) > static_cast<uint64_t>(LLONG_MAX) - size)
    return Refuse(fn, CU_FILE_INVALID_VALUE, "size + file offset overflows");
  const auto addr = reinterpret_cast<uintptr_t>(base);
  if (static_cast<uint64_t>(buf_off) > UINTPTR_MAX - addr ||
      size > UINTPTR_MAX - addr - static_cast<uint64_t>(buf_off))
    return Refuse(fn, CU_FILE_INVALID_VALUE, "buffer + offset + size overflows");

  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return g.status().ToIoReturn();
  Runtime &rt = g->runtime();
  std::shared_ptr<FileHandle> file = rt.handles().Lookup(fh);
  if (!file) return Refuse(fn, CU_FILE_HANDLE_NOT_REGISTERED, "not a registered handle");
  if (write ? !file->writable() : !file->readable()) {
    UFILE_LOG_ERROR("%s: the handle was not opened for %s", fn, write ? "writing" : "reading");
    errno = EBADF;
    return -1;
  }
  if (size == 0) return 0;
  Result<MemInfo> mem = ResolveMemory(fn, rt, base, buf_off, size);
  if (!mem.ok()) return mem.status().ToIoReturn();

  IoRequest req;
  req.file = file.get();
  req.mem = const_cast<char *>(static_cast<const char *>(base)) + buf_off;
  req.mem_info = *mem;
  req.size = size;
  req.file_off = file_off;
  req.write = write;
  Result<size_t> done = ExecuteIo(rt, req);
  if (!done.ok()) return done.status().ToIoReturn();
  return static_cast<ssize_t>(*done);
}

}  // namespace

extern "C" ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size, off_t file_offset,
                              off_t bufPtr_offset) {
  return api::GuardIo(__func__, [&] {
    return DoIo("cuFileRead", fh, bufPtr_base, size, file_offset, bufPtr_offset, false);
  });
}

extern "C" ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size,
                               off_t file_offset, off_t bufPtr_offset) {
  return api::GuardIo(__func__, [&] {
    return DoIo("cuFileWrite", fh, bufPtr_base, size, file_offset, bufPtr_offset, true);
  });
}
