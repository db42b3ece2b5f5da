// SPDX-License-Identifier: Apache-2.0
// Tracing hooks: NVTX v3 ranges (when profile.nvtx is true) and USDT probes
// (always compiled in; a probe is a single nop until a tracer attaches).
//
// USDT probes, provider "ufile" (list them: `readelf -n libufile.so`):
//   read__start(fd, offset, size)          write__start(fd, offset, size)
//   read__done(fd, offset, size, result)   write__done(fd, offset, size, result)
// result is the bytes done, or negative: -errno for a system error,
// -CUfileOpError (5000 and up) for a cuFile error. A request refused before
// it reaches the engine (bad argument, unknown handle) fires no probe.
// Example: bpftrace -e 'usdt:/path/libufile.so:ufile:read__done { @[arg3] = count(); }'
//
// NVTX ranges go to the domain "ufile", named after the API call, with the
// request size as payload. NVTX is header-only: it loads the tool named by
// NVTX_INJECTION64_PATH (Nsight Systems sets it) and costs nothing otherwise.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <sys/types.h>
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>  // systemtap-sdt-dev: header-only, no run-time dependency
#else
#define STAP_PROBE3(provider, name, a1, a2, a3) ((void)(a1), (void)(a2), (void)(a3))
#define STAP_PROBE4(provider, name, a1, a2, a3, a4) ((void)(a1), (void)(a2), (void)(a3), (void)(a4))
#endif

#include <cstddef>
#include <cstdint>

#include "observe/state.h"

namespace ufile::trace {

enum class RangeKind {
  kRead,         // cuFileRead
  kWrite,        // cuFileWrite
  kBatchSubmit,  // cuFileBatchIOSubmit
  kBatchStatus,  // cuFileBatchIOGetStatus
  kBatchCancel,  // cuFileBatchIOCancel
  kStreamRead,   // cuFileReadAsync (enqueue, and the I/O when it runs)
  kStreamWrite,  // cuFileWriteAsync
  kCount,
};

void PushRange(RangeKind kind, uint64_t bytes);
void PopRange();

// An NVTX range for one scope when NVTX is on (one relaxed load otherwise).
class Range {
 public:
  Range(RangeKind kind, uint64_t bytes) : on_(observe::NvtxOn()) {
    if (on_) PushRange(kind, bytes);
  }
  ~Range() {
    if (on_) PopRange();
  }
  Range(const Range &) = delete;
  Range &operator=(const Range &) = delete;

 private:
  bool on_;
};

// USDT probes at the start and end of one file request (also for each I/O of
// a batch or stream operation).
inline void IoStart(bool write, int fd, off_t offset, size_t size) {
  if (write)
    STAP_PROBE3(ufile, write__start, fd, offset, size);
  else
    STAP_PROBE3(ufile, read__start, fd, offset, size);
}

inline void IoDone(bool write, int fd, off_t offset, size_t size, int64_t result) {
  if (write)
    STAP_PROBE4(ufile, write__done, fd, offset, size, result);
  else
    STAP_PROBE4(ufile, read__done, fd, offset, size, result);
}

}  // namespace ufile::trace
