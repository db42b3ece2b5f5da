// SPDX-License-Identifier: Apache-2.0
// Batch API: not implemented yet (issue 4); every call says so.
#include "api/api_util.h"

using namespace ufile;

namespace {
CUfileError_t NotYet(const char *fn) {
  UFILE_LOG_ERROR("%s: the batch API is not implemented yet", fn);
  return api::Err(CU_FILE_IO_NOT_SUPPORTED);
}
}  // namespace

extern "C" CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *, unsigned) {
  return NotYet(__func__);
}
extern "C" CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t, unsigned, CUfileIOParams_t *,
                                             unsigned int) {
  return NotYet(__func__);
}
extern "C" CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t, unsigned, unsigned *,
                                                CUfileIOEvents_t *, struct timespec *) {
  return NotYet(__func__);
}
extern "C" CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t) { return NotYet(__func__); }
extern "C" void cuFileBatchIODestroy(CUfileBatchHandle_t) { NotYet(__func__); }
