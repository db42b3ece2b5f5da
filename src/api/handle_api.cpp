// SPDX-License-Identifier: Apache-2.0
// cuFileHandleRegister / cuFileHandleDeregister.
#include "api/api_util.h"
#include "core/runtime.h"
#include "stats/stats.h"

using namespace ufile;

extern "C" CUfileError_t cuFileHandleRegister(CUfileHandle_t *fh, CUfileDescr_t *descr) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!fh || !descr)
      return UFILE_API_REFUSE("cuFileHandleRegister", CU_FILE_INVALID_VALUE, "NULL %s",
                              !fh ? "fh" : "descr");
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    if (!g.ok()) return g.status().ToCuFileError();
    stats::OnSession(g->runtime());  // profile.cufile_stats / profile.nvtx of this session
    Result<CUfileHandle_t> h =
        (*g)->handles().Register(*descr, (*g)->config().force_odirect_mode);
    stats::Count(stats::kHandleRegister, h.ok());
    if (!h.ok()) return h.status().ToCuFileError();
    *fh = *h;
    return api::Ok();
  });
}

extern "C" void cuFileHandleDeregister(CUfileHandle_t fh) {
  api::Guard(__func__, [&]() -> CUfileError_t {
    if (!fh)
      return UFILE_API_REFUSE("cuFileHandleDeregister", CU_FILE_INVALID_VALUE, "NULL handle");
    // Closed, nothing is registered: no implicit open for a refusal.
    Result<Driver::OpGuard> g = Driver::Get().EnterIfOpen();
    if (!g.ok() && g.status().code() != CU_FILE_DRIVER_NOT_INITIALIZED)
      return g.status().ToCuFileError();
    if (!g.ok())
      return UFILE_API_REFUSE("cuFileHandleDeregister", CU_FILE_HANDLE_NOT_REGISTERED,
                              "%p: the driver is not open", fh);
    if (!stats::Count(stats::kHandleDeregister, (*g)->handles().Deregister(fh)))
      return UFILE_API_REFUSE("cuFileHandleDeregister", CU_FILE_HANDLE_NOT_REGISTERED,
                              "%p is not a registered handle", fh);
    return api::Ok();
  });
}
