// SPDX-License-Identifier: Apache-2.0
// The seam between ufile and the kernel's file API. Every file syscall of the
// data path, io_uring set-up, submission and completions included, goes
// through SysOps, so tests can install a faulty implementation (EIO at chunk
// k, short transfers, EINTR, ENOSPC, a failed io_uring submission, a
// completion's result, ...). Calls return
// the syscall's result and leave errno as the syscall left it.
// Thread-safety: Current() may be called from any thread; Install() is for
// tests and must not race with I/O.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>

struct io_uring;
struct io_uring_cqe;
struct iovec;

namespace ufile {

class SysOps {
 public:
  virtual ~SysOps() = default;
  virtual ssize_t Pread(int fd, void *buf, size_t len, off_t off);
  virtual ssize_t Pwrite(int fd, const void *buf, size_t len, off_t off);
  // preadv2(RWF_NOWAIT): only bytes already in the page cache; -1 with
  // errno EAGAIN when the first byte is not (short when a later one is not).
  virtual ssize_t PreadNowait(int fd, void *buf, size_t len, off_t off);
  // cachestat(2): how many of the pages of [off, off + len) are in the page
  // cache. 0 or -errno (-ENOSYS before Linux 6.5).
  virtual int CachedPages(int fd, off_t off, size_t len, uint64_t *pages);
  virtual int Fstat(int fd, struct stat *st);
  virtual int GetFlags(int fd);  // fcntl(F_GETFL)
  virtual int Open(const char *path, int flags, mode_t mode);
  virtual int Close(int fd);
  // Copies n bytes within this process where dst or src is a caller's
  // pointer that may not be mapped: 0, or -EFAULT instead of a crash
  // (process_vm_readv on this process; memcpy where that call is refused).
  virtual int CopyCallerMemory(void *dst, const void *src, size_t n);
  // io_uring_queue_init: 0 or -errno.
  virtual int UringQueueInit(unsigned entries, struct io_uring *ring, unsigned flags);
  // io_uring_submit_and_wait: SQEs taken by the kernel, or -errno.
  virtual int UringSubmit(struct io_uring *ring, unsigned wait_nr);
  // io_uring_peek_cqe: 0 and a completion, or -EAGAIN when none is ready.
  virtual int UringPeekCqe(struct io_uring *ring, struct io_uring_cqe **cqe);
  // io_uring_wait_cqe: 0 or -errno.
  virtual int UringWaitCqe(struct io_uring *ring, struct io_uring_cqe **cqe);
  // io_uring_register_buffers_sparse: an empty table of nr fixed buffers.
  // 0 or -errno.
  virtual int UringRegisterBuffersSparse(struct io_uring *ring, unsigned nr);
  // Replaces fixed buffer slot with *iov (an empty iovec clears it). 0 or -errno.
  virtual int UringUpdateBuffer(struct io_uring *ring, unsigned slot, const struct iovec *iov);
  // io_uring_register_files_sparse: an empty table of nr registered files.
  // 0 or -errno.
  virtual int UringRegisterFilesSparse(struct io_uring *ring, unsigned nr);
  // Puts descriptor fd in registered file slot (-1 clears it). 0 or -errno.
  virtual int UringUpdateFile(struct io_uring *ring, unsigned slot, int fd);

  // The implementation in use (the real one unless a test installed another).
  static SysOps &Current();
  // Installs ops (nullptr restores the real one); returns the previous one.
  static SysOps *Install(SysOps *ops);
};

// Installs a SysOps for one scope (tests).
class ScopedSysOps {
 public:
  explicit ScopedSysOps(SysOps *ops) : prev_(SysOps::Install(ops)) {}
  ~ScopedSysOps() { SysOps::Install(prev_); }
  ScopedSysOps(const ScopedSysOps &) = delete;
  ScopedSysOps &operator=(const ScopedSysOps &) = delete;

 private:
  SysOps *prev_;
};

}  // namespace ufile
