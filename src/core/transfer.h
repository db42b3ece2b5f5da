// SPDX-License-Identifier: Apache-2.0
// Executes one validated read or write: plans chunks, spreads them over the
// calling thread and free I/O workers, and moves each chunk between the file
// and the request's memory (directly for host memory, through pinned staging
// buffers and per-participant copy streams for GPU memory, the copy of one
// chunk overlapping the file I/O of the next).
// Result: bytes done (a read is short only at end of file), or the error of
// the first failing chunk in file order. On error, bytes outside the request
// are never touched; bytes inside it are unspecified (docs/RELIABILITY.md).
// Thread-safety: any number of requests may run concurrently.
#pragma once

#include <sys/types.h>

#include "base/status.h"
#include "core/file_handle.h"
#include "gpu/memory.h"

namespace ufile {

class Runtime;

struct IoRequest {
  FileHandle *file = nullptr;
  char *mem = nullptr;  // first byte of the request's memory (base + buffer offset)
  MemInfo mem_info;
  size_t size = 0;
  off_t file_off = 0;
  bool write = false;
};

Result<size_t> ExecuteIo(Runtime &rt, const IoRequest &req);

}  // namespace ufile
