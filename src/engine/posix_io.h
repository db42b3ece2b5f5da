// SPDX-License-Identifier: Apache-2.0
// Whole-range pread/pwrite through the SysOps seam: short transfers continue,
// EINTR retries, EAGAIN retries a bounded number of times with a short sleep
// (RetryLoop, which a user-space file system's callbacks share).
// A read returns fewer bytes than asked only at end of file. With align > 1
// (an O_DIRECT descriptor) the loop also stops after a transfer that leaves
// the position unaligned, since O_DIRECT cannot continue from there: the
// caller finishes through a buffered descriptor.
// Thread-safety: stateless.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "base/status.h"

namespace ufile {

// How a transfer loop ended: bytes moved, and 0 or the errno that stopped it.
struct LoopEnd {
  size_t done = 0;
  int err = 0;
};

// The retry loop of pread/pwrite and of a user-space file system's callbacks:
// step(done) moves bytes from position done on and returns how many (> 0),
// 0 (end of file, or nothing taken) or -errno. EINTR is retried at once,
// EAGAIN up to 1000 times with a 1 ms sleep (about a second). With align > 1
// the loop also stops after a transfer that leaves done unaligned.
template <class Step>
LoopEnd RetryLoop(size_t len, size_t align, Step step) {
  constexpr int kMaxEagainRetries = 1000;
  LoopEnd end;
  int eagain = 0;
  while (end.done < len) {
    const ssize_t n = step(end.done);
    if (n > 0) {
      end.done += static_cast<size_t>(n);
      if (align > 1 && end.done % align != 0) break;
      continue;
    }
    if (n == 0) break;
    if (n == -EINTR) continue;
    if (n == -EAGAIN && ++eagain <= kMaxEagainRetries) {
      usleep(1000);
      continue;
    }
    end.err = static_cast<int>(-n);
    break;
  }
  return end;
}

Result<size_t> PreadFull(int fd, void *buf, size_t len, off_t off, size_t align = 1);
Result<size_t> PwriteFull(int fd, const void *buf, size_t len, off_t off, size_t align = 1);
// The prefix of [off, off + len) in the page cache, read without waiting
// for the disk (preadv2 RWF_NOWAIT, through the seam): bytes moved, 0 to len.
// Stops at the first short transfer: the next page is not resident (or the
// file ends). An error, EAGAIN included, ends it with what was moved.
size_t PreadCached(int fd, void *buf, size_t len, off_t off);

}  // namespace ufile
