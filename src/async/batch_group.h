// SPDX-License-Identifier: Apache-2.0
// A group of batch entries run together on one pool thread (async/batch.h
// claims them). Every entry is checked as cuFileRead/cuFileWrite would check
// it. Small entries on plain files then move together:
//   - device-memory writes: one GPU gather (CopyLanes::Gather) copies them
//     all into one pinned staging buffer;
//   - the file I/O of every small entry goes to the engine at once
//     (Engine::RunMany: with io_uring, one submission for the group), host
//     memory straight into or out of the user's buffer, device memory
//     through its staging slot;
//   - device-memory reads: one GPU gather from the staging slots to the
//     users' buffers.
// Reads of O_DIRECT files take what the page cache holds first, as
// cuFileRead does (core/chunk_io.h): an entry whose first page is resident
// is read with RWF_NOWAIT through the buffered descriptor, its rest through
// O_DIRECT.
// Large entries, user-space file systems and O_DIRECT entries that are not
// block-aligned run through RunIo one by one, as cuFileRead would run them.
// Thread-safety: RunGroup may run on any number of threads at once.
#pragma once

#include <cufile.h>

#include <cstddef>
#include <functional>

namespace ufile {

class Runtime;

// One entry of a group: its parameters and, once run, its event.
struct GroupEntry {
  CUfileIOParams_t params{};
  CUfileIOEvents_t event{};
  bool done = false;
};

// Entries up to this size join a group; a group stages at most this much.
inline constexpr size_t kGroupMaxEntry = 256 << 10;
inline constexpr size_t kGroupStageBytes = (1 << 20) - 4096;

// Whether p may share a group, and the staging it takes there.
bool Groupable(const CUfileIOParams_t &p);
size_t GroupCost(const CUfileIOParams_t &p);

// Runs entries[0, n) and sets every event exactly once. canceled() is asked
// before file I/O starts; once it is true, entries whose I/O has not started
// complete CUFILE_CANCELED. Never throws.
void RunGroup(Runtime &rt, GroupEntry *entries, size_t n,
              const std::function<bool()> &canceled) noexcept;

}  // namespace ufile
