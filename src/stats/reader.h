// SPDX-License-Identifier: Apache-2.0
// The reader's side of the statistics segment (ufile-stats, tests): maps
// /dev/shm/ufile-stats-<pid> read-only, checks it, sums it, unmaps it.
// Thread-safety: stateless.
#pragma once

#include <cstdint>
#include <string>

#include "stats/snapshot.h"

namespace ufile::stats {

struct Sample {
  enum class Kind {
    kOk,
    kAbsent,   // no segment: no such process, not using ufile, or level 0
    kStale,    // a segment whose process is gone (killed before it could remove it)
    kDenied,   // another user's segment
    kInvalid,  // not a ufile statistics segment of this version
  };
  Kind kind = Kind::kAbsent;
  std::string detail;  // for anything but kOk: what happened, for the user
  int pid = 0;
  std::string comm;  // the process's name
  uint64_t created_unix_ns = 0;
  uint64_t reset_unix_ns = 0;
  Totals totals;
};

Sample ReadSample(int pid);

// kill(pid, 0) says the process exists (ours or another user's).
bool ProcessAlive(int pid);

}  // namespace ufile::stats
