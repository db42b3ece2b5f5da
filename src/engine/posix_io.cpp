// SPDX-License-Identifier: Apache-2.0
#include "engine/posix_io.h"

#include <cerrno>

#include "base/log.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

// Runs op(done) (a syscall: bytes, or -1 and errno) through RetryLoop.
template <class Op>
Result<size_t> Loop(const char *what, int fd, size_t len, off_t off, size_t align, Op op) {
  const LoopEnd end = RetryLoop(len, align, [&](size_t done) -> ssize_t {
    const ssize_t n = op(done);
    return n < 0 ? -(errno ? errno : EIO) : n;
  });
  if (end.err == 0) return end.done;
  UFILE_LOG_ERROR("%s(fd %d, %zu bytes at %lld) failed: errno %d", what, fd, len - end.done,
                  static_cast<long long>(off) + static_cast<long long>(end.done), end.err);
  return Status::Errno(end.err);
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
