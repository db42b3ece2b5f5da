// SPDX-License-Identifier: Apache-2.0
#include "sys/sys_ops.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace ufile {
namespace {
SysOps g_real_ops;
std::atomic<SysOps *> g_current{&g_real_ops};
}  // namespace

ssize_t SysOps::Pread(int fd, void *buf, size_t len, off_t off) { return ::pread(fd, buf, len, off); }
ssize_t SysOps::Pwrite(int fd, const void *buf, size_t len, off_t off) {
  return ::pwrite(fd, buf, len, off);
}
ssize_t SysOps::PreadNowait(int fd, void *buf, size_t len, off_t off) {
  iovec v{buf, len};
  return ::preadv2(fd, &v, 1, off, RWF_NOWAIT);
}
int SysOps::CachedPages(int fd, off_t off, size_t len, uint64_t *pages) {
  // Debian's headers predate cachestat (Linux 6.5): its number and structs.
  struct Range {
    uint64_t off, len;
  } range{static_cast<uint64_t>(off), len};
  struct Stat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
  } st{};
  constexpr long kCachestat = 451;  // the same on every architecture
  if (::syscall(kCachestat, fd, &range, &st, 0) != 0) return -errno;
  *pages = st.nr_cache;
  return 0;
}
int SysOps::Fstat(int fd, struct stat *st) { return ::fstat(fd, st); }
int SysOps::GetFlags(int fd) { return ::fcntl(fd, F_GETFL); }
int SysOps::Open(const char *path, int flags, mode_t mode) { return ::open(path, flags, mode); }
int SysOps::Close(int fd) { return ::close(fd); }
int SysOps::CopyCallerMemory(void *dst, const void *src, size_t n) {
  // Refused once (seccomp: ENOSYS or EPERM), refused for good: plain memcpy.
  static std::atomic<bool> refused{false};
  while (n > 0 && !refused.load(std::memory_order_relaxed)) {
    iovec local{dst, n};
    iovec remote{const_cast<void *>(src), n};
    // One iovec each: the kernel copies all of it or fails, never part.
    const ssize_t got = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (got == static_cast<ssize_t>(n)) return 0;
    if (got >= 0 || errno == EFAULT) return -EFAULT;
    if (errno == EINTR) continue;
    if (errno != ENOSYS && errno != EPERM) return -errno;
    refused.store(true, std::memory_order_relaxed);
  }
  if (n > 0) std::memcpy(dst, src, n);
  return 0;
}
int SysOps::UringQueueInit(unsigned entries, struct io_uring *ring, unsigned flags) {
  return io_uring_queue_init(entries, ring, flags);
}
int SysOps::UringSubmit(struct io_uring *ring, unsigned wait_nr) {
  return io_uring_submit_and_wait(ring, wait_nr);
}
int SysOps::UringPeekCqe(struct io_uring *ring, struct io_uring_cqe **cqe) {
  return io_uring_peek_cqe(ring, cqe);
}
int SysOps::UringWaitCqe(struct io_uring *ring, struct io_uring_cqe **cqe) {
  return io_uring_wait_cqe(ring, cqe);
}

int SysOps::UringRegisterBuffersSparse(struct io_uring *ring, unsigned nr) {
  return io_uring_register_buffers_sparse(ring, nr);
}
int SysOps::UringUpdateBuffer(struct io_uring *ring, unsigned slot, const struct iovec *iov) {
  const int rc = io_uring_register_buffers_update_tag(ring, slot, iov, nullptr, 1);
  return rc < 0 ? rc : 0;  // it returns how many slots it updated
}

int SysOps::UringRegisterFilesSparse(struct io_uring *ring, unsigned nr) {
  return io_uring_register_files_sparse(ring, nr);
}
int SysOps::UringUpdateFile(struct io_uring *ring, unsigned slot, int fd) {
  const int rc = io_uring_register_files_update(ring, slot, &fd, 1);
  return rc < 0 ? rc : 0;  // it returns how many slots it updated
}

SysOps &SysOps::Current() { return *g_current.load(std::memory_order_acquire); }

SysOps *SysOps::Install(SysOps *ops) {
  SysOps *prev = g_current.exchange(ops ? ops : &g_real_ops, std::memory_order_acq_rel);
  return prev == &g_real_ops ? nullptr : prev;
}

}  // namespace ufile
