// SPDX-License-Identifier: Apache-2.0
// cuFileRead / cuFileWrite: validate, resolve the memory, run the transfer.
#include "api/api_util.h"
#include "core/io_validate.h"
#include "core/runtime.h"
#include "core/transfer.h"
#include "stats/stats.h"

using namespace ufile;

namespace {

ssize_t DoIo(const char *fn, CUfileHandle_t fh, const void *base, size_t size, off_t file_off,
             off_t buf_off, bool write) {
  const IoArgs args{fh, base, size, file_off, buf_off, write};
  Status bad = CheckIoArgs(fn, args);
  if (!bad.ok()) return bad.ToIoReturn();

  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return g.status().ToIoReturn();
  Runtime &rt = g->runtime();
  Result<std::shared_ptr<FileHandle>> file = LookupHandle(fn, rt, fh);
  if (!file.ok()) return file.status().ToIoReturn();
  Status access = CheckAccess(fn, **file, write);
  if (!access.ok()) return access.ToIoReturn();
  if (size == 0) return 0;
  Result<IoRequest> req = BuildRequest(fn, rt, **file, args);
  if (!req.ok()) return req.status().ToIoReturn();
  Result<size_t> done = stats::ObservedExecuteIo(rt, *req);  // stats + tracing
  if (!done.ok()) return done.status().ToIoReturn();
  return static_cast<ssize_t>(*done);
}

}  // namespace

extern "C" ssize_t cuFileRead(CUfileHandle_t fh, void *bufPtr_base, size_t size, off_t file_offset,
                              off_t bufPtr_offset) {
  return api::GuardIo(__func__, [&] {
    return stats::CountIo(
        false, DoIo("cuFileRead", fh, bufPtr_base, size, file_offset, bufPtr_offset, false));
  });
}

extern "C" ssize_t cuFileWrite(CUfileHandle_t fh, const void *bufPtr_base, size_t size,
                               off_t file_offset, off_t bufPtr_offset) {
  return api::GuardIo(__func__, [&] {
    return stats::CountIo(
        true, DoIo("cuFileWrite", fh, bufPtr_base, size, file_offset, bufPtr_offset, true));
  });
}
