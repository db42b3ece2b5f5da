// SPDX-License-Identifier: Apache-2.0
// Statistics: the level control behind cuFileSetStatsLevel & co., and the
// hooks the API calls to count operations. docs/STATS.md lists every counter
// and what increments it.
//
// Levels: 0 off, 1 operation counters (CUfileStatsLevel1_t), 2 also the
// read/write size histograms, 3 also the per-GPU rows. The level is
// profile.cufile_stats when a driver session starts, unless the program has
// called cuFileSetStatsLevel: from then on the API's level holds (before open,
// while open and across reopen). cuFileStatsStop pauses collection without
// changing the level; cuFileStatsStart resumes it.
// While the level is above 0 the counters are published read-only to the
// same user as /dev/shm/ufile-stats-<pid> (ufile-stats -p <pid>); the
// segment is removed at level 0, at driver close and at normal exit.
//
// Cost: every hook first reads one relaxed atomic (observe/state.h) and
// returns at level 0. Above it, counters are relaxed atomic adds on a
// per-thread shard of the segment: no lock on any I/O path.
//
// The batch API reports through the RecordBatch* hooks below (one call at
// each site; each is a no-op at level 0).
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "observe/state.h"
#include "stats/segment.h"
#include "stats/snapshot.h"

namespace ufile {

struct Config;
class Runtime;
struct RegisteredBuffer;

namespace stats {

using observe::CollectLevel;
using observe::kLevelMask;
using observe::kNvtxBit;
using observe::State;

// ---- control (api/stats_api.cpp) -------------------------------------------

// cuFileSetStatsLevel: level in 0..3 (the caller checks the range).
void SetLevel(int level);
int GetLevel();
// cuFileStatsStart: CU_FILE_INVALID_VALUE at level 0 (set a level first).
Status Start();
void Stop();
// Zeroes every counter (not the level, the UUIDs or the reg_bytes gauges).
void Reset();
// The counters summed; CU_FILE_INVALID_VALUE when the level set is below want.
Status Snapshot(int want, Totals *out);

// ---- driver sessions -------------------------------------------------------

// The statistics observe driver sessions and each cuFileRead/Write through
// the observer they install when the library loads (observe/observer.h): a
// session applies its profile.cufile_stats (unless the API set a level) and
// profile.nvtx; its end removes the published segment (the counters stay
// readable through the API). The API calls OnSession with each registration.
void OnSession(Runtime &rt);

// ---- hooks: one line each in api/ ------------------------------------------

void CountOpSlow(Op op, bool ok);
// Counts op as ok or failed; returns ok (so it can wrap a condition).
inline bool Count(Op op, bool ok) {
  if (CollectLevel()) CountOpSlow(op, ok);
  return ok;
}

void CountIoErrorSlow(bool write);
// cuFileRead/Write's return value: a failure (< 0) counts an error. Successes
// are counted by the observer, which RunIo hands each request's sample.
inline ssize_t CountIo(bool write, ssize_t result) {
  if (result < 0 && CollectLevel()) CountIoErrorSlow(write);
  return result;
}

// cuFileBufRegister's outcome for buf (reg_bytes gauge of its GPU).
void CountBufRegister(const RegisteredBuffer &buf, const Status &s);
// cuFileBufDeregister's outcome for the buffer at base.
void CountBufDeregister(const void *base, const Status &s);

// ---- batch hooks (api/batch_api.cpp) ---------------------------------------

// CLOCK_MONOTONIC ns when collecting, else 0: pass it back to the hooks.
uint64_t StartTimer();

void RecordBatchSetup(bool ok);    // cuFileBatchIOSetUp
void RecordBatchDestroy(bool ok);  // cuFileBatchIODestroy
void RecordBatchCancel(bool ok);   // cuFileBatchIOCancel
void RecordBatchStatus(bool ok);   // cuFileBatchIOGetStatus (batch_complete_ops)

struct BatchSubmit {
  unsigned reads = 0, writes = 0;            // I/Os in the submission
  uint64_t read_bytes = 0, write_bytes = 0;  // bytes they ask for
  bool io_uring = false;                     // engine: io_uring, else thread pool (POSIX)
  uint64_t start_ns = 0;                     // StartTimer() at entry
};
// cuFileBatchIOSubmit: ok is whether the submission was accepted.
void RecordBatchSubmit(bool ok, const BatchSubmit &b);

struct BatchIoDone {
  bool write = false;
  bool ok = false;
  uint64_t bytes = 0;      // bytes done
  uint64_t submit_ns = 0;  // StartTimer() when the I/O was submitted
  bool io_uring = false;
  int device = -1;     // CUDA ordinal of device memory, -1 for host memory
  bool posix = false;  // through a descriptor without O_DIRECT
  bool unaligned = false;
};
// One I/O of a batch finished (batch_processed_ops, bytes, completion latency).
void RecordBatchIoDone(const BatchIoDone &io);

}  // namespace stats
}  // namespace ufile
