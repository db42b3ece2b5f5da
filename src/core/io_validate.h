// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by every entry point that starts a read or write
// (cuFileRead/Write, batch entries, stream operations): the same checks, the
// same log lines, the same status for each refusal. Each step logs what it
// refuses under the caller's function name.
// Thread-safety: stateless.
#pragma once

#include <cufile.h>
#include <sys/types.h>

#include <memory>

#include "core/config.h"
#include "core/file_handle.h"
#include "core/status.h"
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

// Resolves the memory of [base + buf_off, + size) (size > 0) and builds the
// request for ExecuteIo. file must outlive the request.
Result<IoRequest> BuildRequest(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a);

}  // namespace ufile
