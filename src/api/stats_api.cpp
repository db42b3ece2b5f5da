// SPDX-License-Identifier: Apache-2.0
// Stats API over stats/stats.h. cuFileSetStatsLevel works before and after
// cuFileDriverOpen; the getters need a level at least as high as the struct
// asked for (L1: 1, L2: 2, L3: 3), else CU_FILE_INVALID_VALUE, as for NULL.
#include "api/api_util.h"
#include "stats/stats.h"

using namespace ufile;

namespace {

// Snapshot at level want, filled into out by fill.
template <class T, class Fill>
CUfileError_t GetStats(const char *fn, int want, T *out, Fill fill) {
  return api::Guard(fn, [&]() -> CUfileError_t {
    if (!out) return UFILE_API_REFUSE("cuFileGetStats", CU_FILE_INVALID_VALUE, "NULL stats");
    stats::Totals totals;
    Status s = stats::Snapshot(want, &totals);
    if (!s.ok())
      return UFILE_API_REFUSE("cuFileGetStats", CU_FILE_INVALID_VALUE,
                              "level %d statistics asked for, but the level is %d", want,
                              stats::GetLevel());
    fill(totals, out);
    return api::Ok();
  });
}

}  // namespace

extern "C" CUfileError_t cuFileSetStatsLevel(int level) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (level < 0 || level > 3)
      return UFILE_API_REFUSE("cuFileSetStatsLevel", CU_FILE_INVALID_VALUE, "level %d outside 0..3",
                              level);
    stats::SetLevel(level);
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileGetStatsLevel(int *level) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!level) return UFILE_API_REFUSE("cuFileGetStatsLevel", CU_FILE_INVALID_VALUE, "NULL level");
    *level = stats::GetLevel();
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileStatsStart(void) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!stats::Start().ok())
      return UFILE_API_REFUSE("cuFileStatsStart", CU_FILE_INVALID_VALUE,
                              "the statistics level is 0: call cuFileSetStatsLevel first");
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileStatsStop(void) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    stats::Stop();
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileStatsReset(void) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    stats::Reset();
    return api::Ok();
  });
}

extern "C" CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *stats) {
  return GetStats(__func__, 1, stats, stats::FillLevel1);
}

extern "C" CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *stats) {
  return GetStats(__func__, 2, stats, stats::FillLevel2);
}

extern "C" CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *stats) {
  return GetStats(__func__, 3, stats, stats::FillLevel3);
}
