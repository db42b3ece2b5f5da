// SPDX-License-Identifier: Apache-2.0
// Stats API: levels are validated and kept; counters are not collected yet
// (issue 5), so the getters report CU_FILE_IO_NOT_SUPPORTED.
#include <atomic>

#include "api/api_util.h"

using namespace ufile;

namespace {
std::atomic<int> g_level{0};
CUfileError_t NotYet(const char *fn) {
  UFILE_LOG_ERROR("%s: statistics are not collected yet", fn);
  return api::Err(CU_FILE_IO_NOT_SUPPORTED);
}
}  // namespace

extern "C" CUfileError_t cuFileSetStatsLevel(int level) {
  if (level < 0 || level > 3) {
    UFILE_LOG_ERROR("cuFileSetStatsLevel: level %d outside 0..3", level);
    return api::Err(CU_FILE_INVALID_VALUE);
  }
  g_level = level;
  return api::Ok();
}
extern "C" CUfileError_t cuFileGetStatsLevel(int *level) {
  if (!level) return api::Err(CU_FILE_INVALID_VALUE);
  *level = g_level;
  return api::Ok();
}
extern "C" CUfileError_t cuFileStatsStart(void) { return NotYet(__func__); }
extern "C" CUfileError_t cuFileStatsStop(void) { return NotYet(__func__); }
extern "C" CUfileError_t cuFileStatsReset(void) { return NotYet(__func__); }
extern "C" CUfileError_t cuFileGetStatsL1(CUfileStatsLevel1_t *) { return NotYet(__func__); }
extern "C" CUfileError_t cuFileGetStatsL2(CUfileStatsLevel2_t *) { return NotYet(__func__); }
extern "C" CUfileError_t cuFileGetStatsL3(CUfileStatsLevel3_t *) { return NotYet(__func__); }
