// SPDX-License-Identifier: Apache-2.0
// The io_uring engine. Each thread that moves bytes gets its own ring (no
// locks on the data path; rings live until their thread exits). A transfer
// is split into pieces of up to kPiece bytes submitted together, so one
// thread keeps several requests in flight (what an O_DIRECT read of a cold
// file needs); a page-cache hit completes inline at submission. RunMany puts
// many independent transfers (a batch's entries) in flight the same way, one
// submission for all of them. An op whose memory lies in a published staging
// buffer moves as a registered buffer (READ_FIXED / WRITE_FIXED, see
// engine/ring_registry.h), and a registered handle's descriptor as a
// registered file, when the engine is configured so. Submissions and
// completions go through the SysOps seam (tests inject a failed submission
// and a completion's result: an errno, a short count). A
// short or failed-with-EAGAIN piece is finished by the POSIX loop, which also
// knows how to stop at an unaligned end of file; a page-cache-only read
// (RWF_NOWAIT in the SQE) is not: it returns its resident prefix.
#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "base/log.h"
#include "engine/engine.h"
#include "engine/posix_io.h"
#include "engine/ring_registry.h"
#include "sys/fork_epoch.h"
#include "sys/sys_ops.h"

namespace ufile {
namespace {

constexpr size_t kPiece = 1 << 20;

// Orders a ring's last use before the first use of any ring created after
// it. The kernel may map a new ring where a torn-down one was, and liburing
// maps and unmaps with raw system calls that ThreadSanitizer cannot see:
// without this edge the two rings' accesses look like a data race.
std::atomic<unsigned> g_rings_torn_down{0};

// This thread's ring; torn down when the thread exits.
class ThreadRing {
 public:
  ~ThreadRing() { Reset(); }
  void Reset() {
    if (!ok_) return;
    RingRegistry::Get().Detach(registered_);  // before the ring goes: Withdraw*() may reach it
    g_rings_torn_down.fetch_add(1, std::memory_order_release);
    io_uring_queue_exit(&ring_);
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
        g_rings_torn_down.load(std::memory_order_acquire);
        ok_ = true;
        depth_ = depth;
        epoch_ = ForkEpoch();
        registered_.ring = &ring_;
      }
    }
    *out = &ring_;
    return ok_ ? static_cast<int>(depth_) : err_;
  }
  // The slot op may use as a registered buffer on this ring, or kNoFixedSlot.
  int BufferSlot(const EngineOp &op) {
    const bool ready = op.fixed != kNoFixedSlot && op.len > 0 &&
                       RingRegistry::Get().BufferReady(registered_, op.fixed, op.buf, op.len);
    return ready ? op.fixed : kNoFixedSlot;
  }
  void ReadyAllBuffers() { RingRegistry::Get().ReadyAllBuffers(registered_); }
  // The registered file index of op's descriptor on this ring, or kNoFixedSlot.
  int FileSlot(const EngineOp &op) {
    return op.len > 0 ? RingRegistry::Get().FileSlot(registered_, op.fd) : kNoFixedSlot;
  }

 private:
  io_uring ring_{};
  RegisteredRing registered_;
  bool ok_ = false;
  int err_ = 0;
  unsigned depth_ = 0;
  unsigned epoch_ = 0;
};

thread_local ThreadRing t_ring;

// A piece of an op: at most kPiece bytes, one SQE.
struct Piece {
  size_t op;   // index into the ops
  size_t off;  // within the op
  size_t len;
  int buffer;   // registered buffer slot, or kNoFixedSlot
  int file;     // registered file index, or kNoFixedSlot
  ssize_t res;  // the CQE's result, or kNotDone
};

// Fills sqe for piece p of op, with its registered buffer and file if any.
void Prep(io_uring_sqe *sqe, const EngineOp &op, const Piece &p) {
  const int fd = p.file != kNoFixedSlot ? p.file : op.fd;
  char *const buf = op.buf + p.off;
  const unsigned n = static_cast<unsigned>(p.len);
  const off_t at = op.off + static_cast<off_t>(p.off);
  if (p.buffer != kNoFixedSlot && op.write)
    io_uring_prep_write_fixed(sqe, fd, buf, n, at, p.buffer);
  else if (p.buffer != kNoFixedSlot)
    io_uring_prep_read_fixed(sqe, fd, buf, n, at, p.buffer);
  else if (op.write)
    io_uring_prep_write(sqe, fd, buf, n, at);
  else
    io_uring_prep_read(sqe, fd, buf, n, at);
  if (p.file != kNoFixedSlot) io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
  if (op.nowait) sqe->rw_flags = RWF_NOWAIT;  // -EAGAIN, never a wait for the disk
}

constexpr ssize_t kNotDone = std::numeric_limits<ssize_t>::min();

class UringEngine final : public Engine {
 public:
  UringEngine(unsigned depth, const EngineRegistration &use) : depth_(depth), use_(use) {}
  const char *name() const override { return "io_uring"; }

  Result<size_t> Read(int fd, void *buf, size_t len, off_t off, size_t align, int fixed) override {
    return RunOne(false, fd, buf, len, off, align, fixed);
  }
  // Buffered writes (align 1) go straight to pwrite: io_uring hands them to
  // an io-wq worker, since they may block on the inode lock, and that extra
  // hand-off slows a writer (docs/DESIGN.md).
  Result<size_t> Write(int fd, const void *buf, size_t len, off_t off, size_t align,
                       int fixed) override {
    if (align <= 1) return PwriteFull(fd, buf, len, off, align);
    return RunOne(true, fd, const_cast<void *>(buf), len, off, align, fixed);
  }
  size_t ReadCached(int fd, void *buf, size_t len, off_t off, int fixed) override {
    EngineOp op{false, fd, static_cast<char *>(buf), len, off, 1, fixed, size_t{0}, true};
    RunMany(&op, 1);
    return op.result.ok() ? *op.result : 0;
  }
  void RunMany(EngineOp *ops, size_t n) override;
  size_t together() const override { return depth_; }
  void PrepareThread() override {
    io_uring *ring = nullptr;
    if (t_ring.Get(depth_, &ring) >= 0 && use_.buffers) t_ring.ReadyAllBuffers();
  }

 private:
  Result<size_t> RunOne(bool write, int fd, void *buf, size_t len, off_t off, size_t align,
                        int fixed) {
    EngineOp op{write, fd, static_cast<char *>(buf), len, off, align, fixed, size_t{0}};
    RunMany(&op, 1);
    return op.result;
  }
  unsigned depth_;
  EngineRegistration use_;
};

// Submits every piece (in waves of the ring's depth, each wave one
// submission through the SysOps seam) and reaps them all. On a failed
// submission it still waits for what the kernel took, so no request outlives
// the call; the caller then discards the ring, which drops the SQEs never
// submitted (their pieces stay kNotDone).
int SubmitAll(io_uring *ring, unsigned depth, const EngineOp *ops, std::vector<Piece> &pieces) {
  SysOps &sys = SysOps::Current();
  size_t next = 0, queued = 0, submitted = 0;
  auto reap = [&](io_uring_cqe *cqe) {
    pieces[reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqe))].res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    --submitted;
  };
  while (next < pieces.size() || queued > 0 || submitted > 0) {
    while (next < pieces.size() && queued + submitted < depth) {
      io_uring_sqe *sqe = io_uring_get_sqe(ring);
      if (!sqe) break;
      Prep(sqe, ops[pieces[next].op], pieces[next]);
      io_uring_sqe_set_data(sqe, reinterpret_cast<void *>(next));
      ++next;
      ++queued;
    }
    int r = sys.UringSubmit(ring, 1);
    if (r == -EINTR) r = 0;  // nothing was taken
    if (r < 0) {
      for (io_uring_cqe *cqe = nullptr; submitted > 0 && sys.UringWaitCqe(ring, &cqe) == 0;)
        reap(cqe);
      return r;
    }
    queued -= static_cast<size_t>(r);
    submitted += static_cast<size_t>(r);
    io_uring_cqe *cqe = nullptr;
    while (submitted > 0 && sys.UringPeekCqe(ring, &cqe) == 0) reap(cqe);
  }
  return 0;
}

// An op's result from its pieces (pieces[first, end)): the first piece that
// did not fully complete ends the fast path, and the POSIX loop finishes
// from there (retries, short transfers, end of file, unaligned tails).
void Finish(EngineOp &op, const Piece *p, const Piece *end, int submit_err) {
  size_t done = 0;
  if (op.nowait) {  // the resident prefix: up to the first piece not wholly read
    for (; p != end && p->res == static_cast<ssize_t>(p->len); ++p) done += p->len;
    if (p != end && p->res > 0) done += static_cast<size_t>(p->res);
    op.result = done;
    return;
  }
  for (; p != end; ++p) {
    if (p->res == kNotDone) {
      op.result = Status::Errno(submit_err);
      return;
    }
    if (p->res < 0 && p->res != -EAGAIN && p->res != -EINTR) {
      UFILE_LOG_ERROR("io_uring %s(fd %d, %zu bytes at %lld) failed: errno %d",
                      op.write ? "write" : "read", op.fd, p->len,
                      static_cast<long long>(op.off) + static_cast<long long>(p->off),
                      static_cast<int>(-p->res));
      op.result = Status::Errno(static_cast<int>(-p->res));
      return;
    }
    if (p->res != static_cast<ssize_t>(p->len)) break;
    done += p->len;
  }
  if (done == op.len) {
    op.result = done;
    return;
  }
  const off_t at = op.off + static_cast<off_t>(done);
  Result<size_t> rest = op.write ? PwriteFull(op.fd, op.buf + done, op.len - done, at, op.align)
                                 : PreadFull(op.fd, op.buf + done, op.len - done, at, op.align);
  op.result = rest.ok() ? Result<size_t>(done + *rest) : rest;
}

void UringEngine::RunMany(EngineOp *ops, size_t n) {
  io_uring *ring = nullptr;
  const int depth = t_ring.Get(depth_, &ring);
  if (depth < 0) {  // no ring on this thread: the POSIX loops
    for (size_t i = 0; i < n; ++i) {
      EngineOp &op = ops[i];
      if (op.nowait)
        op.result = PreadCached(op.fd, op.buf, op.len, op.off);
      else
        op.result = op.write ? PwriteFull(op.fd, op.buf, op.len, op.off, op.align)
                             : PreadFull(op.fd, op.buf, op.len, op.off, op.align);
    }
    return;
  }
  std::vector<Piece> pieces;
  pieces.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int buffer = use_.buffers ? t_ring.BufferSlot(ops[i]) : kNoFixedSlot;
    const int file = use_.files ? t_ring.FileSlot(ops[i]) : kNoFixedSlot;
    for (size_t o = 0; o < ops[i].len; o += kPiece)
      pieces.push_back(Piece{i, o, std::min(kPiece, ops[i].len - o), buffer, file, kNotDone});
  }
  const int r = SubmitAll(ring, static_cast<unsigned>(depth), ops, pieces);
  if (r < 0) {
    UFILE_LOG_ERROR("io_uring submission failed: %s; this thread's ring is reset", strerror(-r));
    t_ring.Reset();
  }
  const Piece *p = pieces.data(), *end = p + pieces.size();
  for (size_t i = 0; i < n; ++i) {
    const Piece *first = p;
    while (p != end && p->op == i) ++p;
    if (ops[i].len == 0)
      ops[i].result = size_t{0};
    else
      Finish(ops[i], first, p, -r);
  }
}

}  // namespace

std::unique_ptr<Engine> MakeUringEngine(size_t queue_depth, const EngineRegistration &use,
                                        std::string *why) {
  io_uring probe{};
  int r = SysOps::Current().UringQueueInit(4, &probe, 0);
  if (r < 0) {
    *why = std::string("io_uring_queue_init: ") + strerror(-r);
    return nullptr;
  }
  io_uring_queue_exit(&probe);
  // The key refuses values outside its range; a Config built in code may hold any.
  const unsigned depth = static_cast<unsigned>(
      std::clamp<size_t>(queue_depth, kMinIoQueueDepth, kMaxIoQueueDepth));
  return std::make_unique<UringEngine>(depth, use);
}

std::unique_ptr<Engine> MakeEngine(const Config &cfg) {
  const bool want_uring = cfg.engine == EngineKind::kIoUring ||
                          (cfg.engine == EngineKind::kAuto && cfg.prefer_io_uring);
  if (want_uring) {
    std::string why;
    const EngineRegistration use{cfg.io_uring_fixed_buffers, cfg.io_uring_fixed_files};
    if (auto e = MakeUringEngine(cfg.max_io_queue_depth, use, &why)) {
      UFILE_LOG_INFO(
          "engine: io_uring (queue depth %zu per thread; registered buffers %s, "
          "files %s)",
          e->together(), use.buffers ? "on" : "off", use.files ? "on" : "off");
      return e;
    }
    UFILE_LOG_WARN("engine: io_uring unavailable (%s); using POSIX pread/pwrite", why.c_str());
  } else {
    UFILE_LOG_INFO("engine: POSIX pread/pwrite (configured)");
  }
  return MakePosixEngine();
}

}  // namespace ufile
