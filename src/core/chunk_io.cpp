// SPDX-License-Identifier: Apache-2.0
#include "core/chunk_io.h"

#include <unistd.h>

#include <cerrno>

#include "core/log.h"

namespace ufile {
namespace {

constexpr int kMaxEagainRetries = 1000;  // ~1 s of 1 ms sleeps, as engine/posix_io

// A user-space filesystem's callback, looped like pread: bytes or -errno.
template <class Fn>
Result<size_t> CallbackLoop(const char *what, Fn fn, size_t len) {
  size_t done = 0;
  int eagain = 0;
  while (done < len) {
    ssize_t n = fn(done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) break;
    if (n == -EINTR) continue;
    if (n == -EAGAIN && ++eagain <= kMaxEagainRetries) {
      usleep(1000);
      continue;
    }
    const int err = n < -4095 || n == -1 ? EIO : static_cast<int>(-n);
    UFILE_LOG_ERROR("user-space filesystem %s callback failed: %zd", what, n);
    return Status::Errno(err);
  }
  return done;
}

// Runs op on the O_DIRECT descriptor, then finishes any unaligned remainder
// through the buffered one.
template <class Op>
Result<size_t> DirectThenBuffered(FileHandle &file, const Chunk &c, Op op) {
  Result<size_t> r = op(file.fd(), 0, c.len, file.align());
  if (!r.ok() || *r == c.len || *r % file.align() == 0) return r;
  Result<int> bfd = file.BufferedFd();
  if (!bfd.ok()) return bfd.status();
  Result<size_t> rest = op(*bfd, *r, c.len - *r, 1);
  if (!rest.ok()) return rest;
  return *r + *rest;
}

}  // namespace

Result<size_t> ReadChunk(Engine &engine, FileHandle &file, const Chunk &c, void *dst, int fixed) {
  char *out = static_cast<char *>(dst);
  if (file.is_fs_ops()) {
    return CallbackLoop("read", [&](size_t done) {
      return file.fs_ops()->read(file.user_handle(), out + done, c.len - done,
                                 c.file_off + static_cast<loff_t>(done), nullptr);
    }, c.len);
  }
  auto op = [&](int fd, size_t skip, size_t len, size_t align) {
    return engine.Read(fd, out + skip, len, c.file_off + static_cast<off_t>(skip), align, fixed);
  };
  if (c.direct) return DirectThenBuffered(file, c, op);
  Result<int> fd = file.BufferedFd();
  if (!fd.ok()) return fd.status();
  return op(*fd, 0, c.len, 1);
}

Result<size_t> WriteChunk(Engine &engine, FileHandle &file, const Chunk &c, const void *src,
                          int fixed) {
  const char *in = static_cast<const char *>(src);
  if (file.is_fs_ops()) {
    Result<size_t> r = CallbackLoop("write", [&](size_t done) {
      return file.fs_ops()->write(file.user_handle(), in + done, c.len - done,
                                  c.file_off + static_cast<loff_t>(done), nullptr);
    }, c.len);
    if (r.ok() && *r < c.len) return Status::Errno(EIO);  // no progress
    return r;
  }
  auto op = [&](int fd, size_t skip, size_t len, size_t align) {
    return engine.Write(fd, in + skip, len, c.file_off + static_cast<off_t>(skip), align, fixed);
  };
  if (c.direct) return DirectThenBuffered(file, c, op);
  Result<int> fd = file.BufferedFd();
  if (!fd.ok()) return fd.status();
  return op(*fd, 0, c.len, 1);
}

}  // namespace ufile
