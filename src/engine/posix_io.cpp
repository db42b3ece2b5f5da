// SPDX-License-Identifier: Apache-2.0
#include "engine/posix_io.h"

#include <unistd.h>

#include <cerrno>

#include "base/log.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

constexpr int kMaxEagainRetries = 1000;  // ~1 s of 1 ms sleeps

// Runs op(done) until len bytes moved, op returns 0 (EOF) or a hard error.
template <class Op>
Result<size_t> Loop(const char *what, int fd, size_t len, off_t off, size_t align, Op op) {
  size_t done = 0;
  int eagain = 0;
  while (done < len) {
    ssize_t n = op(done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      if (align > 1 && done % align != 0) break;
      continue;
    }
    if (n == 0) break;  // end of file (reads) or a device that takes nothing
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN && ++eagain <= kMaxEagainRetries) {
      usleep(1000);
      continue;
    }
    UFILE_LOG_ERROR("%s(fd %d, %zu bytes at %lld) failed: errno %d", what, fd, len - done,
                    static_cast<long long>(off) + static_cast<long long>(done), err);
    return Status::Errno(err);
  }
  return done;
}

}  // namespace

Result<size_t> PreadFull(int fd, void *buf, size_t len, off_t off, size_t align) {
  SysOps &sys = SysOps::Current();
  return Loop("pread", fd, len, off, align, [&](size_t done) {
    return sys.Pread(fd, static_cast<char *>(buf) + done, len - done, off + static_cast<off_t>(done));
  });
}

size_t PreadCached(int fd, void *buf, size_t len, off_t off) {
  SysOps &sys = SysOps::Current();
  size_t done = 0;
  while (done < len) {
    const size_t want = len - done;
    const ssize_t n = sys.PreadNowait(fd, static_cast<char *>(buf) + done, want,
                                      off + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < want) break;  // the next page is not resident, or EOF
  }
  return done;
}

Result<size_t> PwriteFull(int fd, const void *buf, size_t len, off_t off, size_t align) {
  SysOps &sys = SysOps::Current();
  Result<size_t> r = Loop("pwrite", fd, len, off, align, [&](size_t done) {
    return sys.Pwrite(fd, static_cast<const char *>(buf) + done, len - done,
                      off + static_cast<off_t>(done));
  });
  if (r.ok() && *r < len && (align <= 1 || *r % align == 0)) {
    // pwrite returning 0 for a non-empty buffer: the file cannot grow.
    UFILE_LOG_ERROR("pwrite(fd %d) made no progress at %lld", fd,
                    static_cast<long long>(off) + static_cast<long long>(*r));
    return Status::Errno(EIO);
  }
  return r;
}

}  // namespace ufile
