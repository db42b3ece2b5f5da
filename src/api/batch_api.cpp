// SPDX-License-Identifier: Apache-2.0
// Batch API: check arguments, find the batch, call it (async/batch.h).
#include <memory>
#include <string_view>

#include "api/api_util.h"
#include "async/batch.h"
#include "async/batch_stats.h"
#include "core/runtime.h"
#include "observe/trace.h"

using namespace ufile;

namespace {

// The live batch h, or nullptr after logging why not.
std::shared_ptr<Batch> Find(const char *fn, CUfileBatchHandle_t h) {
  std::shared_ptr<Batch> b = BatchTable::Get().Lookup(h);
  if (!b) UFILE_LOG_ERROR("%s: %p is not a live batch handle", fn, h);
  return b;
}

// Whether the running engine is io_uring (for the batch counters).
bool EngineIsUring() {
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  return g.ok() && std::string_view(g->runtime().engine().name()) == "io_uring";
}

// Runs an entry point's body and counts it with record(ok).
template <class Body>
CUfileError_t Counted(void (*record)(bool), Body &&body) {
  CUfileError_t e = body();
  record(e.err == CU_FILE_SUCCESS);
  return e;
}

bool ValidTimeout(const timespec *t) {
  return !t || (t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000L);
}

}  // namespace

extern "C" CUfileError_t cuFileBatchIOSetUp(CUfileBatchHandle_t *batch_idp, unsigned nr) {
  return api::Guard(__func__, [&] { return Counted(stats::RecordBatchSetup, [&] {
    if (!batch_idp)
      return UFILE_API_REFUSE("cuFileBatchIOSetUp", CU_FILE_INVALID_VALUE, "NULL batch_idp");
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    if (!g.ok()) return g.status().ToCuFileError();
    const size_t limit = g->runtime().config().io_batchsize;
    if (nr == 0 || nr > limit)
      return UFILE_API_REFUSE("cuFileBatchIOSetUp", CU_FILE_INVALID_VALUE,
                              "nr %u outside 1..%zu (properties.io_batchsize)", nr, limit);
    auto batch = std::make_shared<Batch>(nr, g->runtime().shared_config());
    *batch_idp = BatchTable::Get().Add(std::move(batch));
    return api::Ok();
  }); });
}

extern "C" CUfileError_t cuFileBatchIOSubmit(CUfileBatchHandle_t batch_idp, unsigned nr,
                                             CUfileIOParams_t *iocbp, unsigned int flags) {
  return api::Guard(__func__, [&] {
#define fn "cuFileBatchIOSubmit"
    if (flags != 0) return UFILE_API_REFUSE(fn, CU_FILE_INVALID_VALUE, "flags 0x%x, not 0", flags);
    if (!iocbp) return UFILE_API_REFUSE(fn, CU_FILE_INVALID_VALUE, "NULL iocbp");
    std::shared_ptr<Batch> b = Find(fn, batch_idp);
#undef fn
    if (!b) return api::Err(CU_FILE_INVALID_VALUE);
    const uint64_t start = stats::StartTimer();
    trace::Range range(trace::RangeKind::kBatchSubmit, nr);
    const Status s = b->Submit(iocbp, nr);
    if (start) batch_stats::Submit(s.ok(), iocbp, nr, EngineIsUring(), start);
    return s.ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileBatchIOGetStatus(CUfileBatchHandle_t batch_idp, unsigned min_nr,
                                                unsigned *nr, CUfileIOEvents_t *iocbp,
                                                struct timespec *timeout) {
  return api::Guard(__func__, [&] {
#define fn "cuFileBatchIOGetStatus"
    if (!nr) return UFILE_API_REFUSE(fn, CU_FILE_INVALID_VALUE, "NULL nr");
    if (min_nr > *nr)
      return UFILE_API_REFUSE(fn, CU_FILE_INVALID_VALUE, "min_nr %u > *nr %u", min_nr, *nr);
    if (*nr > 0 && !iocbp) return UFILE_API_REFUSE(fn, CU_FILE_INVALID_VALUE, "NULL iocbp");
    if (!ValidTimeout(timeout))
      return UFILE_API_REFUSE(fn, CU_FILE_INVALID_VALUE, "timeout {%lld s, %ld ns} is not valid",
                              static_cast<long long>(timeout->tv_sec), timeout->tv_nsec);
    std::shared_ptr<Batch> b = Find(fn, batch_idp);
#undef fn
    if (!b) return api::Err(CU_FILE_INVALID_VALUE);
    trace::Range range(trace::RangeKind::kBatchStatus, *nr);
    b->GetStatus(min_nr, nr, iocbp, timeout);
    stats::RecordBatchStatus(true);
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileBatchIOCancel(CUfileBatchHandle_t batch_idp) {
  return api::Guard(__func__, [&] {
    return Counted(stats::RecordBatchCancel, [&] {
      std::shared_ptr<Batch> b = Find("cuFileBatchIOCancel", batch_idp);
      if (!b) return api::Err(CU_FILE_INVALID_VALUE);
      trace::Range range(trace::RangeKind::kBatchCancel, 0);
      b->Cancel();
      return api::Ok();
    });
  });
}

extern "C" void cuFileBatchIODestroy(CUfileBatchHandle_t batch_idp) {
  api::Guard(__func__, [&] { return Counted(stats::RecordBatchDestroy, [&] {
    std::shared_ptr<Batch> b = BatchTable::Get().Remove(batch_idp);
    if (!b) {
      UFILE_LOG_ERROR("cuFileBatchIODestroy: %p is not a live batch handle", batch_idp);
      return api::Err(CU_FILE_INVALID_VALUE);
    }
    b->Close();  // waits for running entries; queued drain tasks hold the rest
    return api::Ok();
  }); });
}
