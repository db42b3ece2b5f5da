// SPDX-License-Identifier: Apache-2.0
// The synchronous core of an asynchronous operation (a batch entry, a stream
// operation): validate, resolve memory, run ExecuteIo on the calling thread,
// and the two ways a failure is reported to the user without errno.
// Thread-safety: stateless.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "core/file_handle.h"
#include "core/io_validate.h"
#include "core/status.h"

namespace ufile {

class Runtime;

// Checks a and runs the I/O on file, looked up (and held) since submission.
// Bytes done or the first refusal or error.
Result<size_t> RunIoOn(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a);

// Batch events: -errno for a system error, -CUfileOpError for a cuFile one,
// -CU_FILE_CUDA_DRIVER_ERROR for a CUDA one.
int64_t NegativeError(const Status &s);
// Stream results (*bytes_p), as NVIDIA documents them: -1 for a system I/O
// error, else -CUfileOpError. errno is not touched: the caller's thread is
// long gone.
ssize_t StreamError(const Status &s);

}  // namespace ufile
