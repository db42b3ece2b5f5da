// SPDX-License-Identifier: Apache-2.0
// A snapshot of a statistics segment: the shards summed, then converted to
// the ABI's CUfileStatsLevel1/2/3_t with the derived values (averages,
// bandwidths, rates) computed the same way for cuFileGetStatsL* and for
// ufile-stats. docs/STATS.md defines every field.
// Thread-safety: stateless; the segment may be updated while it is read.
#pragma once

#include <cufile.h>

#include "stats/segment.h"

namespace ufile::stats {

struct GpuTotals {
  uint64_t bytes = 0, ops = 0, errors = 0, posix = 0, unaligned = 0, busy_ns = 0;
  uint64_t first_ns = 0, last_ns = 0;
};

struct Totals {
  uint32_t level = 0;
  bool running = false;
  uint64_t ops[kNumOps][2] = {};
  uint64_t bytes[kNumKinds] = {};
  uint64_t lat_ns[kNumLats] = {};
  uint64_t first_ns[kNumKinds] = {};  // earliest over the shards (0: none)
  uint64_t last_ns[kNumKinds] = {};   // latest over the shards
  uint64_t hist[2][kHistBuckets] = {};
  GpuTotals gpu[kMaxGpus][2];
  uint32_t num_gpus = 0;
  uint64_t last_batch_bytes[2] = {};
  uint64_t reg_bytes[kMaxGpus] = {};
  bool uuid_set[kMaxGpus] = {};
  char uuid[kMaxGpus][16] = {};
};

Totals Sum(const Segment &seg);

// Fill the ABI structs from t (every field written; unknown ones are 0).
void FillLevel1(const Totals &t, CUfileStatsLevel1_t *out);
void FillLevel2(const Totals &t, CUfileStatsLevel2_t *out);
void FillLevel3(const Totals &t, CUfileStatsLevel3_t *out);

// bytes (or events) per second over [first_ns, last_ns]; 0 for an empty window.
uint64_t PerSecond(uint64_t amount, uint64_t first_ns, uint64_t last_ns);

}  // namespace ufile::stats
