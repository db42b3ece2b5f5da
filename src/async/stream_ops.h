// SPDX-License-Identifier: Apache-2.0
// Stream-ordered reads and writes (cuFileReadAsync / cuFileWriteAsync) and
// the stream registrations that fix their parameters (cuFileStreamRegister).
//
// On a user stream an operation is three stream memory operations on a flag
// slot in pinned host memory (async/flag_pool.h):
//   1. cuStreamWriteValue32(reach = 1): the stream has reached it;
//   2. cuStreamWaitValue32(go == 1): the stream waits for the I/O;
//   3. cuStreamWriteValue32(reach = 2): the stream has passed it.
// ufile's stream watcher (async/stream_watcher.h) sees 1, hands the I/O to
// a stream executor thread (async/stream_executor.h), which reads the
// parameters not fixed by registration, runs the I/O through RunIo
// (spread over the I/O pool and its copy lanes, as a synchronous call of
// that size would be), stores *bytes_p and sets go. The watcher sees 2 and retires the operation
// (frees the slot, drops the driver guard). No CUDA host function is used:
// CUDA runs them on one thread for all streams, which serializes independent
// streams. A stream is held only while its own I/O runs.
// The NULL stream, and every stream when stream memory operations are
// bypassed (stream_memops_bypass) or no pinned flag can be had, run the I/O
// on the calling thread after synchronizing the stream (and checking the
// descriptor again, as an enqueued operation does when it runs).
// Each operation holds a Driver::OpGuard until retired: cuFileDriverClose
// waits for stream work that was enqueued before it.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cufile.h>
#include <sys/types.h>

#include "base/status.h"

namespace ufile {

struct StreamIoArgs {
  const char *fn = "";
  bool write = false;
  CUfileHandle_t fh = nullptr;
  void *base = nullptr;
  size_t *size_p = nullptr;
  off_t *file_off_p = nullptr;
  off_t *buf_off_p = nullptr;
  ssize_t *bytes_p = nullptr;
  CUstream stream = nullptr;
};

// Enqueues (or, for the NULL stream, performs) one operation. Refusals found
// at submission are returned; errors of the I/O itself go to *bytes_p.
Status SubmitStreamIo(const StreamIoArgs &a);

// flags: CU_FILE_STREAM_* bits (0..15). Registering again replaces the flags.
Status RegisterStream(CUstream stream, unsigned flags);
// CU_FILE_INVALID_VALUE if stream is not registered.
Status DeregisterStream(CUstream stream);
// The registered flags of stream (0 when not registered).
unsigned StreamFlags(CUstream stream);

}  // namespace ufile
