// SPDX-License-Identifier: Apache-2.0
// The writer's side of the statistics segment (stats/segment.h).
//
// The segment is mapped once at a fixed address and never unmapped, so a
// hook that raced with a level change still writes to valid memory. It starts
// as private memory; Publish() creates /dev/shm/ufile-stats-<pid> (O_EXCL,
// mode 0600), copies the counters into it and maps it over the same address
// (MAP_FIXED); Unpublish() only removes the name. An increment racing with
// Publish() may be lost.
// Thread-safety: callers hold the stats mutex (stats/stats.cpp).
#pragma once

#include "stats/segment.h"

namespace ufile::stats {

// Maps a fresh segment (private memory) with its header filled in.
Segment *CreateSegment();

// Shares seg under SegmentName(getpid()); true when published (already or now).
// A leftover object of that name (an earlier process with the same pid) is
// replaced. The name is removed at normal exit.
bool Publish(Segment *seg);
void Unpublish();
bool Published();

// Zeroes the shard counters and the last-batch sizes; stamps reset_unix_ns.
void ZeroCounters(Segment *seg);

// In a child after fork: maps fresh private memory over seg (so the child
// never writes into its parent's published segment) and forgets the name.
void DetachAfterFork(Segment *seg);

uint64_t RealtimeNs();

}  // namespace ufile::stats
