// SPDX-License-Identifier: Apache-2.0
// The file under test: created and filled with the pattern (pattern.h) when
// needed, its state kept in a sidecar "<file>.ufile-bench" ("pattern": every
// byte is the pattern; "dirty": an unverified write run changed it). A file
// without a sidecar is the user's: it is read, never refilled.
// Thread-safety: call from the main thread only.
#pragma once

#include <cstdint>
#include <string>

#include "common.h"

namespace bench {

// Makes path hold the pattern over its first size bytes (size 0: keep the
// file's size, or 1 GiB for a new file), filling it with nthreads threads
// when it is new, too small, or dirty. need_pattern false: a user's file is
// accepted as it is. *size receives the size used.
Status PrepareFile(const std::string &path, uint64_t *size, bool need_pattern, int nthreads,
                   bool quiet);

// Records that an unverified write run is about to change the file.
void MarkDirty(const std::string &path);

// Drops the file's pages from the page cache: fsync + POSIX_FADV_DONTNEED,
// and drop_caches=1 where permitted. Returns what was done ("fadvise",
// "fadvise+drop_caches"), or an error.
Status DropCache(const std::string &path, std::string *how);

// Whether O_DIRECT opens of path work (tmpfs refuses them).
bool DirectIoWorks(const std::string &path);

}  // namespace bench
