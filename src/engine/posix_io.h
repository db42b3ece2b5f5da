// SPDX-License-Identifier: Apache-2.0
// Whole-range pread/pwrite through the SysOps seam: short transfers continue,
// EINTR retries, EAGAIN retries a bounded number of times with a short sleep.
// A read returns fewer bytes than asked only at end of file. With align > 1
// (an O_DIRECT descriptor) the loop also stops after a transfer that leaves
// the position unaligned, since O_DIRECT cannot continue from there: the
// caller finishes through a buffered descriptor.
// Thread-safety: stateless.
#pragma once

#include <sys/types.h>

#include "base/status.h"

namespace ufile {

Result<size_t> PreadFull(int fd, void *buf, size_t len, off_t off, size_t align = 1);
Result<size_t> PwriteFull(int fd, const void *buf, size_t len, off_t off, size_t align = 1);
// The prefix of [off, off + len) in the page cache, read without waiting
// for the disk (preadv2 RWF_NOWAIT, through the seam): bytes moved, 0 to len.
// Stops at the first short transfer: the next page is not resident (or the
// file ends). An error, EAGAIN included, ends it with what was moved.
size_t PreadCached(int fd, void *buf, size_t len, off_t off);

}  // namespace ufile
