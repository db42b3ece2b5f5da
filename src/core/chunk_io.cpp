// SPDX-License-Identifier: Apache-2.0
#include "core/chunk_io.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "base/log.h"
#include "engine/posix_io.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

constexpr size_t kPage = 4096;

std::atomic<uint64_t> g_cached_bytes{0};
std::atomic<uint64_t> g_direct_fallbacks{0};

// Whether the page at off is resident; true where cachestat is refused
// (before Linux 6.5), so that the RWF_NOWAIT read itself decides.
bool PageResident(int fd, off_t off) {
  uint64_t pages = 0;
  const off_t at = off / static_cast<off_t>(kPage) * static_cast<off_t>(kPage);
  return SysOps::Current().CachedPages(fd, at, kPage, &pages) != 0 || pages > 0;
}

// A user-space filesystem's callback, looped like pread: bytes or -errno (a
// value outside -4095..-2, -1 included, counts as EIO).
template <class Fn>
Result<size_t> CallbackLoop(const char *what, Fn fn, size_t len) {
  ssize_t last = 0;
  const LoopEnd end = RetryLoop(len, 1, [&](size_t done) -> ssize_t {
    last = fn(done);
    return last < -4095 || last == -1 ? -EIO : last;
  });
  if (end.err == 0) return end.done;
  UFILE_LOG_ERROR("user-space filesystem %s callback failed: %zd", what, last);
  return Status::Errno(end.err);
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

// The prefix of chunk c the page cache holds, read into out through the
// buffered descriptor; 0 when the probe finds its first page on disk (a
// cold file costs one cachestat per chunk, and no readahead: RWF_NOWAIT on a
// missing page starts one).
size_t FromPageCache(Engine &engine, FileHandle &file, const Chunk &c, char *out, int fixed) {
  Result<int> bfd = file.BufferedFd();
  if (!bfd.ok()) return 0;
  if (!c.hot && !PageResident(*bfd, c.file_off)) return 0;
  const size_t n = engine.ReadCached(*bfd, out, c.len, c.file_off, fixed);
  if (n > 0) g_cached_bytes.fetch_add(n, std::memory_order_relaxed);
  return n;
}

// Chunk c from the page cache as far as it holds it, into out: the bytes
// kept, all of c or the prefix down to an aligned position (so the rest
// re-reads at most a block), and when short, *rest, what is left to read
// another way (a direct fallback, counted).
size_t CachedPrefix(Engine &engine, FileHandle &file, const Chunk &c, char *out, int fixed,
                    Chunk *rest) {
  const size_t got = FromPageCache(engine, file, c, out, fixed);
  if (got == c.len) return got;
  const size_t keep = got / file.align() * file.align();
  g_direct_fallbacks.fetch_add(1, std::memory_order_relaxed);
  *rest = c;
  rest->file_off += static_cast<off_t>(keep);
  rest->buf_off += keep;
  rest->len -= keep;
  rest->cache_first = false;  // just tried
  return keep;
}

// Chunk c from the page cache as far as it holds it, the rest through
// O_DIRECT (op, as DirectThenBuffered takes it) from an aligned position.
template <class Op>
Result<size_t> CacheThenDirect(Engine &engine, FileHandle &file, const Chunk &c, char *out,
                               int fixed, Op op) {
  Chunk rest;
  const size_t keep = CachedPrefix(engine, file, c, out, fixed, &rest);
  if (keep == c.len) return keep;
  auto op_rest = [&](int fd, size_t skip, size_t len, size_t align) {
    return op(fd, keep + skip, len, align);
  };
  Result<size_t> r = DirectThenBuffered(file, rest, op_rest);
  if (!r.ok()) return r;
  return keep + *r;
}

}  // namespace

size_t ReadCachedPrefix(Engine &engine, FileHandle &file, const Chunk &c, void *out, Chunk *rest) {
  return CachedPrefix(engine, file, c, static_cast<char *>(out), kNoFixedSlot, rest);
}

bool LooksResident(FileHandle &file, off_t off, size_t len) {
  if (len == 0 || file.is_fs_ops()) return false;
  Result<int> bfd = file.BufferedFd();
  if (!bfd.ok()) return false;
  const off_t last = off + static_cast<off_t>(len - 1);
  for (off_t at : {off, off + static_cast<off_t>(len / 2), last}) {
    uint64_t pages = 0;
    const off_t page = at / static_cast<off_t>(kPage) * static_cast<off_t>(kPage);
    if (SysOps::Current().CachedPages(*bfd, page, kPage, &pages) != 0 || pages == 0) return false;
  }
  return true;
}

int CachedReadFd(FileHandle &file, off_t off) {
  if (file.is_fs_ops()) return -1;
  Result<int> bfd = file.BufferedFd();
  return bfd.ok() && PageResident(*bfd, off) ? *bfd : -1;
}

void CountPageCacheRead(size_t cached, bool fell_back) {
  if (cached > 0) g_cached_bytes.fetch_add(cached, std::memory_order_relaxed);
  if (fell_back) g_direct_fallbacks.fetch_add(1, std::memory_order_relaxed);
}

PageCacheReadCounts PageCacheReads() {
  return {g_cached_bytes.load(std::memory_order_relaxed),
          g_direct_fallbacks.load(std::memory_order_relaxed)};
}

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
  if (c.direct && c.cache_first) return CacheThenDirect(engine, file, c, out, fixed, op);
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
