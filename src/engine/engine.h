// SPDX-License-Identifier: Apache-2.0
// Engine: how a chunk's bytes move between a file descriptor and host memory.
// Two implementations: io_uring (one ring per thread, a large transfer split
// into concurrent pieces) and POSIX pread/pwrite (the fallback when io_uring
// is unavailable: disabled by sysctl, refused by seccomp, or configured off).
// Both have PreadFull/PwriteFull's contract (engine/posix_io.h).
// Thread-safety: Read/Write may be called from any thread concurrently.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/config.h"
#include "base/status.h"
#include "engine/ring_registry.h"

namespace ufile {

// One independent transfer of Engine::RunMany; result as Read/Write give it.
struct EngineOp {
  bool write = false;
  int fd = -1;
  char *buf = nullptr;
  size_t len = 0;
  off_t off = 0;
  size_t align = 1;
  int fixed = kNoFixedSlot;  // the registered-buffer slot buf lies in, if any
  Result<size_t> result = size_t{0};
  // A read of page-cache-resident bytes only (RWF_NOWAIT): no retries, no
  // POSIX finish; result is the resident prefix moved (see ReadCached).
  bool nowait = false;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const char *name() const = 0;
  // fixed: the registered-buffer slot that buf lies in
  // (engine/ring_registry.h), or kNoFixedSlot; io_uring then moves the bytes
  // as a registered buffer.
  virtual Result<size_t> Read(int fd, void *buf, size_t len, off_t off, size_t align,
                              int fixed) = 0;
  virtual Result<size_t> Write(int fd, const void *buf, size_t len, off_t off, size_t align,
                               int fixed) = 0;
  // Copies the prefix of [off, off + len) that the page cache holds through
  // fd (a descriptor without O_DIRECT) without waiting for the disk:
  // the bytes moved, from 0 (the first page is not resident, or any error)
  // to len. The kernel may start readahead of the first missing page.
  virtual size_t ReadCached(int fd, void *buf, size_t len, off_t off, int fixed);
  // Moves ops[0, n) and sets each one's result. io_uring puts them all in
  // flight together (one submission per ring depth); the default runs them
  // one after another.
  virtual void RunMany(EngineOp *ops, size_t n);
  // Prepares this thread's state for I/O (driver open): io_uring creates
  // the thread's ring and registers the staging buffers published so far.
  virtual void PrepareThread() {}
  // How many ops RunMany starts at once (1: one after another), so a caller
  // that may cancel can hand over that many at a time.
  virtual size_t together() const { return 1; }
};

std::unique_ptr<Engine> MakePosixEngine();
// Which io_uring registrations the engine uses (engine/ring_registry.h):
// published staging buffers, registered handles' descriptors.
struct EngineRegistration {
  bool buffers = true;
  bool files = false;  // see Config::io_uring_fixed_files
};
// nullptr (with the reason in *why) when io_uring cannot be set up here.
// Each thread's ring has queue_depth entries, brought into [kMinIoQueueDepth,
// kMaxIoQueueDepth]; together() returns the depth used.
std::unique_ptr<Engine> MakeUringEngine(size_t queue_depth, const EngineRegistration &use,
                                        std::string *why);

// The engine cfg asks for: io_uring when configured (or auto) and usable,
// else POSIX. The choice and its reason are logged.
std::unique_ptr<Engine> MakeEngine(const Config &cfg);

}  // namespace ufile
