// SPDX-License-Identifier: Apache-2.0
// Where batch activity meets the statistics (cuFileGetStats*): the batch
// calls these hooks and nothing else. They do nothing yet; the stats code
// fills them in (batch submissions, entries by outcome, bytes).
// Thread-safety: called from any thread, possibly under a batch's lock:
// a hook must not block or call back into the batch API.
#pragma once

#include <cufile.h>

namespace ufile::batch_stats {

// nr entries accepted by one cuFileBatchIOSubmit.
inline void Submitted(unsigned nr) {
  (void)nr;
}
// One entry finished: status is CUFILE_COMPLETE, CUFILE_FAILED or
// CUFILE_CANCELED; bytes is its byte count when complete.
inline void EntryDone(bool write, CUfileStatus_t status, size_t bytes) {
  (void)write;
  (void)status;
  (void)bytes;
}

}  // namespace ufile::batch_stats
