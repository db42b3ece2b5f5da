// SPDX-License-Identifier: Apache-2.0
// Stream API: not implemented yet (issue 4); every call says so.
#include "api/api_util.h"

using namespace ufile;

namespace {
CUfileError_t NotYet(const char *fn) {
  UFILE_LOG_ERROR("%s: the stream API is not implemented yet", fn);
  return api::Err(CU_FILE_ASYNC_NOT_SUPPORTED);
}
}  // namespace

extern "C" CUfileError_t cuFileReadAsync(CUfileHandle_t, void *, size_t *, off_t *, off_t *,
                                         ssize_t *, CUstream) {
  return NotYet(__func__);
}
extern "C" CUfileError_t cuFileWriteAsync(CUfileHandle_t, void *, size_t *, off_t *, off_t *,
                                          ssize_t *, CUstream) {
  return NotYet(__func__);
}
extern "C" CUfileError_t cuFileStreamRegister(CUstream, unsigned) { return NotYet(__func__); }
extern "C" CUfileError_t cuFileStreamDeregister(CUstream) { return NotYet(__func__); }
