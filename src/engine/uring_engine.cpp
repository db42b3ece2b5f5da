// SPDX-License-Identifier: Apache-2.0
// The io_uring engine. Each thread that moves bytes gets its own ring (no
// locks on the data path; rings live until their thread exits). A transfer
// is split into pieces of up to kPiece bytes submitted together, so one
// thread keeps several requests in flight (what an O_DIRECT read of a cold
// file needs); a page-cache hit completes inline at submission. A short or
// failed-with-EAGAIN piece is finished by the POSIX loop, which also knows
// how to stop at an unaligned end of file.
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/log.h"
#include "engine/engine.h"
#include "engine/posix_io.h"
#include "sys/fork_epoch.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

constexpr size_t kPiece = 1 << 20;

// This thread's ring; torn down when the thread exits.
class ThreadRing {
 public:
  ~ThreadRing() { Reset(); }
  void Reset() {
    if (ok_) io_uring_queue_exit(&ring_);
    ok_ = false;
  }
  // The ring, created on first use with depth entries (0 or -errno).
  int Get(unsigned depth, io_uring **out) {
    if (ok_ && epoch_ != ForkEpoch()) {
      // Inherited across fork: the rings are mapped shared with the parent.
      // Exiting drops only this process's mapping and descriptor.
      Reset();
      err_ = 0;
    }
    if (!ok_ && err_ == 0) {
      int r = SysOps::Current().UringQueueInit(depth, &ring_, 0);
      if (r < 0) {
        err_ = r;
        UFILE_LOG_WARN("io_uring_queue_init(%u) failed on this thread: %s", depth, strerror(-r));
      } else {
        ok_ = true;
        depth_ = depth;
        epoch_ = ForkEpoch();
      }
    }
    *out = &ring_;
    return ok_ ? static_cast<int>(depth_) : err_;
  }

 private:
  io_uring ring_{};
  bool ok_ = false;
  int err_ = 0;
  unsigned depth_ = 0;
  unsigned epoch_ = 0;
};

thread_local ThreadRing t_ring;

struct Piece {
  size_t off;  // within the transfer
  size_t len;
  ssize_t res = 0;
};

class UringEngine final : public Engine {
 public:
  explicit UringEngine(unsigned depth) : depth_(depth) {}
  const char *name() const override { return "io_uring"; }

  Result<size_t> Read(int fd, void *buf, size_t len, off_t off, size_t align) override {
    return Run(false, fd, buf, len, off, align);
  }
  Result<size_t> Write(int fd, const void *buf, size_t len, off_t off, size_t align) override {
    return Run(true, fd, const_cast<void *>(buf), len, off, align);
  }

 private:
  Result<size_t> Run(bool write, int fd, void *buf, size_t len, off_t off, size_t align);
  unsigned depth_;
};

// Submits every piece (in waves of the ring's depth) and reaps them all. On
// a failed submission it still waits for what the kernel took, so no
// request outlives the call; the caller then discards the ring, which drops
// the SQEs never submitted.
int SubmitAll(io_uring *ring, unsigned depth, bool write, int fd, char *buf, off_t off,
              std::vector<Piece> &pieces) {
  size_t next = 0, queued = 0, submitted = 0;
  while (next < pieces.size() || queued > 0 || submitted > 0) {
    while (next < pieces.size() && queued + submitted < depth) {
      io_uring_sqe *sqe = io_uring_get_sqe(ring);
      if (!sqe) break;
      Piece &p = pieces[next];
      const off_t at = off + static_cast<off_t>(p.off);
      const unsigned n = static_cast<unsigned>(p.len);
      if (write)
        io_uring_prep_write(sqe, fd, buf + p.off, n, at);
      else
        io_uring_prep_read(sqe, fd, buf + p.off, n, at);
      io_uring_sqe_set_data(sqe, reinterpret_cast<void *>(next));
      ++next;
      ++queued;
    }
    int r = io_uring_submit_and_wait(ring, 1);
    if (r == -EINTR) r = 0;  // nothing was taken
    if (r < 0) {
      for (io_uring_cqe *cqe = nullptr; submitted > 0 && io_uring_wait_cqe(ring, &cqe) == 0;
           --submitted)
        io_uring_cqe_seen(ring, cqe);
      return r;
    }
    queued -= static_cast<size_t>(r);
    submitted += static_cast<size_t>(r);
    io_uring_cqe *cqe = nullptr;
    while (submitted > 0 && io_uring_peek_cqe(ring, &cqe) == 0) {
      pieces[reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe))].res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      --submitted;
    }
  }
  return 0;
}

Result<size_t> UringEngine::Run(bool write, int fd, void *buf, size_t len, off_t off,
                                size_t align) {
  io_uring *ring = nullptr;
  int depth = t_ring.Get(depth_, &ring);
  if (depth < 0 || len == 0) {
    return write ? PwriteFull(fd, buf, len, off, align) : PreadFull(fd, buf, len, off, align);
  }
  std::vector<Piece> pieces;
  for (size_t o = 0; o < len; o += kPiece) pieces.push_back({o, std::min(kPiece, len - o)});
  char *bytes = static_cast<char *>(buf);
  int r = SubmitAll(ring, static_cast<unsigned>(depth), write, fd, bytes, off, pieces);
  if (r < 0) {
    UFILE_LOG_ERROR("io_uring submission failed: %s; this thread's ring is reset", strerror(-r));
    t_ring.Reset();
    return Status::Errno(-r);
  }
  // The first piece that did not fully complete ends the fast path.
  size_t done = 0;
  for (const Piece &p : pieces) {
    if (p.res < 0 && p.res != -EAGAIN && p.res != -EINTR) {
      UFILE_LOG_ERROR("io_uring %s(fd %d, %zu bytes at %lld) failed: errno %d",
                      write ? "write" : "read", fd, p.len,
                      static_cast<long long>(off) + static_cast<long long>(p.off),
                      static_cast<int>(-p.res));
      return Status::Errno(static_cast<int>(-p.res));
    }
    if (p.res != static_cast<ssize_t>(p.len)) break;
    done += p.len;
  }
  if (done == len) return done;
  // Finish from the first incomplete piece with the POSIX loop (retries,
  // short transfers, end of file, unaligned tails).
  Result<size_t> rest = write ? PwriteFull(fd, bytes + done, len - done,
                                           off + static_cast<off_t>(done), align)
                              : PreadFull(fd, bytes + done, len - done,
                                          off + static_cast<off_t>(done), align);
  if (!rest.ok()) return rest;
  return done + *rest;
}

}  // namespace

std::unique_ptr<Engine> MakeUringEngine(size_t queue_depth, std::string *why) {
  io_uring probe{};
  int r = SysOps::Current().UringQueueInit(4, &probe, 0);
  if (r < 0) {
    *why = std::string("io_uring_queue_init: ") + strerror(-r);
    return nullptr;
  }
  io_uring_queue_exit(&probe);
  const unsigned depth = static_cast<unsigned>(std::clamp<size_t>(queue_depth, 4, 4096));
  return std::make_unique<UringEngine>(depth);
}

std::unique_ptr<Engine> MakeEngine(const Config &cfg) {
  const bool want_uring = cfg.engine == EngineKind::kIoUring ||
                          (cfg.engine == EngineKind::kAuto && cfg.prefer_io_uring);
  if (want_uring) {
    std::string why;
    if (auto e = MakeUringEngine(cfg.max_io_queue_depth, &why)) {
      UFILE_LOG_INFO("engine: io_uring (queue depth %zu per thread)", cfg.max_io_queue_depth);
      return e;
    }
    UFILE_LOG_WARN("engine: io_uring unavailable (%s); using POSIX pread/pwrite", why.c_str());
  } else {
    UFILE_LOG_INFO("engine: POSIX pread/pwrite (configured)");
  }
  return MakePosixEngine();
}

}  // namespace ufile
