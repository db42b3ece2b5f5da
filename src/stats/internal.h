// SPDX-License-Identifier: Apache-2.0
// Shared between stats.cpp (control) and record.cpp (hooks); not an API.
#pragma once

#include "observe/observer.h"
#include "stats/segment.h"

namespace ufile::stats {

// The process's segment once a level above 0 was ever set, else nullptr.
Segment *CurrentSegment();
// A new driver session: registrations of the old one are gone.
void ForgetRegistrations();
// The registrations' lock, taken around fork() after the control lock (its
// holders wait for nothing else), so a child finds it free and consistent.
void LockRegistrationsForFork();
void UnlockRegistrationsAfterFork();
// The observer's report of one cuFileRead/Write: bytes, latency, window,
// histogram (level 2), per-GPU row (level 3).
void RecordIo(const observe::IoSample &io);

}  // namespace ufile::stats
