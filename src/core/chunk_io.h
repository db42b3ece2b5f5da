// SPDX-License-Identifier: Apache-2.0
// File I/O of one planned chunk between the file and host memory: through the
// O_DIRECT descriptor or the buffered one (through the engine), or a
// user-space filesystem's callbacks. A read is short only at end of file.
// Thread-safety: stateless.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "core/file_handle.h"
#include "engine/engine.h"
#include "plan/planner.h"

namespace ufile {

// fixed: the engine/ring_registry buffer slot the host memory lies in (a staging
// lease's), or kNoFixedSlot. A direct chunk with cache_first takes what the
// page cache holds of it first (through the buffered descriptor, RWF_NOWAIT:
// never waiting for the disk), unless a probe (cachestat) finds its first
// page not resident; the rest, from the last aligned byte taken, goes
// through O_DIRECT as usual.
Result<size_t> ReadChunk(Engine &engine, FileHandle &file, const Chunk &c, void *dst, int fixed);
// Whether [off, off + len) of file looks resident in the page cache: its
// first, middle and last pages are (three single-page cachestat calls, so a
// request of any size costs the same). False where cachestat is refused.
bool LooksResident(FileHandle &file, off_t off, size_t len);

// The prefix of direct read chunk c (cache_first) that the page cache holds,
// read into out through the buffered descriptor, which needs no alignment.
// Returns the bytes kept: all of c, or that prefix down to the file's
// alignment (0 when the probe finds its first page on disk), *rest then
// being the part of c the caller still reads. Counted in PageCacheReads.
size_t ReadCachedPrefix(Engine &engine, FileHandle &file, const Chunk &c, void *out, Chunk *rest);

// Process-wide counts of direct read chunks that tried the page cache:
// bytes taken from it, and chunks that then went on through O_DIRECT
// (tests, ufile-bench).
struct PageCacheReadCounts {
  uint64_t cached_bytes = 0;
  uint64_t direct_fallbacks = 0;
};
PageCacheReadCounts PageCacheReads();

// The check a direct chunk with cache_first makes, for reads that move
// elsewhere (async/batch_group.h): the buffered descriptor to read
// [off, ...) from the page cache through (RWF_NOWAIT), or -1 when the page
// at off is not resident or there is no buffered descriptor.
int CachedReadFd(FileHandle &file, off_t off);
// Counts such a read in PageCacheReads: cached bytes taken from the cache,
// fell_back when the rest then went through O_DIRECT.
void CountPageCacheRead(size_t cached, bool fell_back);

Result<size_t> WriteChunk(Engine &engine, FileHandle &file, const Chunk &c, const void *src,
                          int fixed);

}  // namespace ufile
