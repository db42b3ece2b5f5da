// SPDX-License-Identifier: Apache-2.0
// cuFileRead / cuFileWrite: validate, resolve the memory, run the transfer.
#include "api/api_util.h"
#include "core/io_request.h"
#include "core/runtime.h"
#include "core/transfer.h"
#include "stats/stats.h"

using namespace ufile;

namespace {

ssize_t DoIo(const char *fn, CUfileHandle_t fh, const void *base, size_t size, off_t file_off,
             off_t buf_off, bool write) {
  const IoArgs args{fh, base, size, file_off, buf_off, write};
  // Refused before the driver is entered, which would open it.
  Status bad = CheckIoArgs(fn, args);
  if (!bad.ok()) return bad.ToIoReturn();

  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return g.status().ToIoReturn();
  Runtime &rt = g->runtime();
  Result<PreparedIo> io = PrepareIo(fn, rt, args);
  if (!io.ok()) return io.status().ToIoReturn();
  Result<size_t> done = RunIo(rt, io->req, IoOrigin::kSync);
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
