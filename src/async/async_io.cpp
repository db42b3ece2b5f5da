// SPDX-License-Identifier: Apache-2.0
#include "async/async_io.h"

#include <cstring>

#include "core/runtime.h"
#include "core/transfer.h"
#include "trace/trace.h"

namespace ufile {

namespace {

// The NVTX range of an I/O issued by a batch or a stream operation, named
// after the API call that issued it.
trace::RangeKind RangeFor(const char *fn, bool write) {
  if (std::strstr(fn, "Async"))
    return write ? trace::RangeKind::kStreamWrite : trace::RangeKind::kStreamRead;
  return trace::RangeKind::kBatchSubmit;
}

// RunIoOn after CheckIoArgs; traced like cuFileRead/cuFileWrite (NVTX range,
// USDT read/write start and done probes).
Result<size_t> RunChecked(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a) {
  UFILE_RETURN_IF_ERROR(CheckAccess(fn, file, a.write));
  if (a.size == 0) return size_t{0};
  Result<IoRequest> req = BuildRequest(fn, rt, file, a);
  if (!req.ok()) return req.status();
  trace::Range range(RangeFor(fn, a.write), a.size);
  const int fd = file.is_fs_ops() ? -1 : file.user_fd();
  trace::IoStart(a.write, fd, a.file_off, a.size);
  Result<size_t> r = ExecuteIo(rt, *req);
  trace::IoDone(a.write, fd, a.file_off, a.size,
                r.ok() ? static_cast<int64_t>(*r) : NegativeError(r.status()));
  return r;
}

}  // namespace

Result<size_t> RunIoOn(const char *fn, Runtime &rt, FileHandle &file, const IoArgs &a) {
  UFILE_RETURN_IF_ERROR(CheckIoArgs(fn, a));
  return RunChecked(fn, rt, file, a);
}

int64_t NegativeError(const Status &s) {
  switch (s.kind()) {
    case Status::Kind::kOk:
      return 0;
    case Status::Kind::kErrno:
    case Status::Kind::kOp:
      return -static_cast<int64_t>(s.code());
    case Status::Kind::kCuda:
      return -static_cast<int64_t>(CU_FILE_CUDA_DRIVER_ERROR);
  }
  return -static_cast<int64_t>(CU_FILE_INTERNAL_ERROR);
}

ssize_t StreamError(const Status &s) {
  switch (s.kind()) {
    case Status::Kind::kOk:
      return 0;
    case Status::Kind::kErrno:
      return -1;
    case Status::Kind::kOp:
      return -static_cast<ssize_t>(s.code());
    case Status::Kind::kCuda:
      return -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR);
  }
  return -static_cast<ssize_t>(CU_FILE_INTERNAL_ERROR);
}

}  // namespace ufile
