// SPDX-License-Identifier: Apache-2.0
// Where batch activity meets the statistics (cuFileGetStats*, stats/stats.h):
// the batch code calls these adapters and nothing else. Each costs one
// relaxed load when stats are off (StartTimer() returns 0 then).
// Thread-safety: called from any thread, possibly under a batch's lock:
// nothing here blocks or calls back into the batch API.
#pragma once

#include <cufile.h>

#include <cstdint>
#include <cstring>

#include "stats/stats.h"

namespace ufile::batch_stats {

inline int Opcode(const CUfileIOParams_t &p) {
  int v = 0;  // any int from C: never loaded as the enum
  std::memcpy(&v, &p.opcode, sizeof v);
  return v;
}

// One cuFileBatchIOSubmit of nr entries; start_ns = stats::StartTimer() at entry.
inline void Submit(bool ok, const CUfileIOParams_t *params, unsigned nr, bool io_uring,
                   uint64_t start_ns) {
  if (!start_ns) return;
  stats::BatchSubmit b;
  b.io_uring = io_uring;
  b.start_ns = start_ns;
  for (unsigned i = 0; params && i < nr; ++i) {
    const bool write = Opcode(params[i]) == CUFILE_WRITE;
    (write ? b.writes : b.reads) += 1;
    (write ? b.write_bytes : b.read_bytes) += params[i].u.batch.size;
  }
  stats::RecordBatchSubmit(ok, b);
}

// One entry finished. Canceled entries are neither processed nor errors.
inline void EntryDone(bool write, CUfileStatus_t status, size_t bytes, uint64_t submit_ns,
                      bool io_uring) {
  if (status == CUFILE_CANCELED) return;
  stats::BatchIoDone io;
  io.write = write;
  io.ok = status == CUFILE_COMPLETE;
  io.bytes = io.ok ? bytes : 0;
  io.submit_ns = submit_ns;
  io.io_uring = io_uring;
  stats::RecordBatchIoDone(io);
}

}  // namespace ufile::batch_stats
