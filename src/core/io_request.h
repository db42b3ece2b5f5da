// SPDX-License-Identifier: Apache-2.0
// Every path that starts a read or write (cuFileRead/Write, a batch entry, a
// stream operation) prepares it with PrepareIo and runs it with RunIo: the
// same checks in the same order, the same log lines, the same status for each
// refusal, the same probes. Each step logs what it refuses under the caller's
// function name.
// Thread-safety: stateless.
#pragma once

#include <cufile.h>
#include <sys/types.h>

#include <memory>

#include "base/config.h"
#include "base/status.h"
#include "core/file_handle.h"
#include "core/transfer.h"

namespace ufile {

class Runtime;

struct IoArgs {
  CUfileHandle_t fh = nullptr;
  const void *base = nullptr;
  size_t size = 0;
  off_t file_off = 0;
  off_t buf_off = 0;
  bool write = false;
};

// Checks that need no driver: NULL buffer, negative offsets, overflowing
// ranges. CU_FILE_INVALID_VALUE on failure.
Status CheckIoArgs(const char *fn, const IoArgs &a);

// The live handle fh, or CU_FILE_HANDLE_NOT_REGISTERED.
Result<std::shared_ptr<FileHandle>> LookupHandle(const char *fn, Runtime &rt, CUfileHandle_t fh);

// EBADF when file was not opened for the direction of the I/O, or its
// descriptor was closed or now names another file; for writes,
// CU_FILE_INVALID_FILE_OPEN_FLAG when it gained O_APPEND
// (FileHandle::CheckDescriptor).
Status CheckAccess(const char *fn, const FileHandle &file, bool write);

// properties.allow_system_memory false: host memory (pageable or pinned,
// anything CUDA does not copy to a device) is CU_FILE_CUDA_MEMORY_TYPE_INVALID,
// the code for a pointer of a memory type the call does not take.
Status CheckMemoryAllowed(const char *fn, const Config &cfg, const MemInfo &mem, const void *p);

// kChecked: the caller has just run CheckAccess on this thread, so PrepareIo
// does not run it (and its fstat) again.
enum class Access { kCheck, kChecked };

// CheckIoArgs, CheckAccess (unless kChecked), then the memory of
// [base + buf_off, + size) resolved into the request for RunIo (a request of
// size 0 has nothing to resolve). file must outlive the request.
Result<IoRequest> PrepareIo(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a,
                            Access access = Access::kCheck);

struct PreparedIo {
  std::shared_ptr<FileHandle> file;  // keeps req.file alive
  IoRequest req;
};
// CheckIoArgs, LookupHandle(a.fh), then PrepareIo on the handle found.
Result<PreparedIo> PrepareIo(const char *fn, Runtime &rt, const IoArgs &a);

// The API call a request came from: names its NVTX range. Only cuFileRead
// and cuFileWrite are counted per request: a batch counts its entries
// through its own statistics, and stream operations are not counted.
enum class IoOrigin { kSync, kBatch, kStream };

// ExecuteIo, observed: the USDT start and done probes, the NVTX range of
// origin when profile.nvtx is on, and, for kSync while a statistics level
// is on, the sample the observer receives. A request of size 0 returns 0
// and fires nothing.
Result<size_t> RunIo(Runtime &rt, const IoRequest &req, IoOrigin origin);

}  // namespace ufile
