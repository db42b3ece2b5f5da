// SPDX-License-Identifier: Apache-2.0
// FaultySysOps: a SysOps that injects pread/pwrite faults (an errno, or a
// short transfer) on the calls covering a file offset or on the k-th call,
// and fstat/F_GETFL/open/io_uring-setup failures. The io_uring engine's reads
// and writes count as calls too: a faulty one is shortened before submission
// (to nothing for an errno, which is then written into the completion the
// engine reaps through UringPeekCqe / UringWaitCqe). Shared by the sync
// (fault_test) and async (fault_async_test) fault tables.
// Thread-safety: arm before the I/O starts; the I/O threads then only read
// the plan and bump atomic counters.
#pragma once

#include <fcntl.h>
#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "sys/sys_ops.h"

namespace ufile::test {

// A SysOps that injects faults. Armed before the I/O starts; the I/O threads
// only read the plan and bump atomic counters.
class FaultySysOps : public SysOps {
 public:
  enum class Op { kPread, kPwrite };
  enum class Action { kErrno, kShort, kShortUnaligned };
  struct Fault {
    Op op = Op::kPread;
    off_t at = -1;    // fire on calls whose range covers this file offset ...
    int at_call = 0;  // ... or on the at_call-th call of op (1-based)
    int times = 1;    // how many matching calls fail
    Action action = Action::kErrno;
    int err = EIO;
  };

  void Arm(const Fault &f) {
    faults_.push_back(f);
    left_.push_back(std::make_unique<std::atomic<int>>(f.times));
  }
  int fired() const { return fired_.load(); }
  int calls(Op op) const { return calls_[static_cast<int>(op)].load(); }
  int fstat_err = 0, getflags_err = 0, open_err = 0, uring_err = 0;

  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    const int call = ++calls_[0];
    const Fault *f = Hit(Op::kPread, off, len, call);
    if (!f) return SysOps::Pread(fd, buf, len, off);
    if (f->action == Action::kErrno) return Fail(f->err);
    const ssize_t n = SysOps::Pread(fd, buf, len, off);
    if (n <= 0) return n;
    const size_t keep = std::min(static_cast<size_t>(n), Keep(*f, fd, len));
    // Scribble past what is reported: a caller that does not continue sees it.
    std::memset(static_cast<char *>(buf) + keep, 0xA5, static_cast<size_t>(n) - keep);
    return static_cast<ssize_t>(keep);
  }
  ssize_t Pwrite(int fd, const void *buf, size_t len, off_t off) override {
    const int call = ++calls_[1];
    const Fault *f = Hit(Op::kPwrite, off, len, call);
    if (!f) return SysOps::Pwrite(fd, buf, len, off);
    if (f->action == Action::kErrno) return Fail(f->err);
    return SysOps::Pwrite(fd, buf, Keep(*f, fd, len), off);  // really short
  }
  int Fstat(int fd, struct stat *st) override {
    return fstat_err ? Fail(fstat_err) : SysOps::Fstat(fd, st);
  }
  int UringQueueInit(unsigned entries, struct io_uring *ring, unsigned flags) override {
    return uring_err ? -uring_err : SysOps::UringQueueInit(entries, ring, flags);
  }
  int GetFlags(int fd) override { return getflags_err ? Fail(getflags_err) : SysOps::GetFlags(fd); }
  // Applies the faults of the reads and writes about to be submitted.
  int UringSubmit(struct io_uring *ring, unsigned wait_nr) override {
    NoteSubmissions(ring);
    return SysOps::UringSubmit(ring, wait_nr);
  }
  int UringPeekCqe(struct io_uring *ring, struct io_uring_cqe **cqe) override {
    const int r = SysOps::UringPeekCqe(ring, cqe);
    if (r == 0) Complete(ring, *cqe);
    return r;
  }
  int UringWaitCqe(struct io_uring *ring, struct io_uring_cqe **cqe) override {
    const int r = SysOps::UringWaitCqe(ring, cqe);
    if (r == 0) Complete(ring, *cqe);
    return r;
  }
  int Open(const char *path, int flags, mode_t mode) override {
    if (open_err) {
      ++fired_;
      return Fail(open_err);
    }
    return SysOps::Open(path, flags, mode);
  }

 private:
  // Faulty reads and writes about to be submitted to a ring: an errno one
  // moves nothing and its completion gets the errno; a short one moves what
  // Keep says, really, except an unaligned one on O_DIRECT (the kernel would
  // refuse that length): it moves all, its completion says less, and a read's
  // bytes past that are scribbled, as Pread does.
  void NoteSubmissions(struct io_uring *ring) {
    std::lock_guard<std::mutex> lock(ring_mu_);
    for (unsigned i = ring->sq.sqe_head; i != ring->sq.sqe_tail; ++i) {
      io_uring_sqe &sqe = ring->sq.sqes[i & ring->sq.ring_mask];
      if (sqe.rw_flags & RWF_NOWAIT) continue;  // page-cache probes: PreadNowait's, not faulted
      const bool write = sqe.opcode == IORING_OP_WRITE || sqe.opcode == IORING_OP_WRITE_FIXED;
      const bool read = sqe.opcode == IORING_OP_READ || sqe.opcode == IORING_OP_READ_FIXED;
      if (!read && !write) continue;
      const Op op = write ? Op::kPwrite : Op::kPread;
      const int call = ++calls_[static_cast<int>(op)];
      const Fault *f = Hit(op, static_cast<off_t>(sqe.off), sqe.len, call);
      if (!f) continue;
      const int fd = (sqe.flags & IOSQE_FIXED_FILE) ? -1 : sqe.fd;
      const unsigned keep = static_cast<unsigned>(Keep(*f, fd, sqe.len));
      if (f->action == Action::kErrno) {
        sqe.len = 0;
        ring_res_[{ring, sqe.user_data}] = {-f->err, nullptr};
      } else if (f->action == Action::kShortUnaligned) {
        char *buf = op == Op::kPread ? reinterpret_cast<char *>(sqe.addr) + keep : nullptr;
        ring_res_[{ring, sqe.user_data}] = {static_cast<int>(keep), buf};
      } else {
        sqe.len = keep;
      }
    }
  }
  // Writes a noted result into its completion.
  void Complete(struct io_uring *ring, struct io_uring_cqe *cqe) {
    std::lock_guard<std::mutex> lock(ring_mu_);
    auto it = ring_res_.find({ring, cqe->user_data});
    if (it == ring_res_.end()) return;
    const RingResult r = it->second;
    ring_res_.erase(it);
    if (cqe->res < 0 || cqe->res <= r.res) return;
    if (r.scribble) std::memset(r.scribble, 0xA5, static_cast<size_t>(cqe->res - r.res));
    cqe->res = r.res;
  }
  static int Fail(int err) {
    errno = err;
    return -1;
  }
  // Bytes a short transfer moves: about half, aligned on O_DIRECT descriptors
  // (their transfers cannot be otherwise) unless asked to pretend otherwise.
  static size_t Keep(const Fault &f, int fd, size_t len) {
    const bool direct = fd >= 0 && (::fcntl(fd, F_GETFL) & O_DIRECT) != 0;
    if (f.action == Action::kShortUnaligned || !direct) return len / 2 + 7 < len ? len / 2 + 7 : 1;
    return std::max<size_t>(4096, len / 2 / 4096 * 4096);
  }
  const Fault *Hit(Op op, off_t off, size_t len, int call) {
    for (size_t i = 0; i < faults_.size(); ++i) {
      const Fault &f = faults_[i];
      if (f.op != op) continue;
      const bool match =
          f.at_call ? call == f.at_call : (off <= f.at && f.at < off + static_cast<off_t>(len));
      if (!match || left_[i]->fetch_sub(1) <= 0) continue;
      ++fired_;
      return &f;
    }
    return nullptr;
  }
  std::vector<Fault> faults_;
  std::vector<std::unique_ptr<std::atomic<int>>> left_;
  std::atomic<int> fired_{0};
  std::atomic<int> calls_[2] = {0, 0};
  std::mutex ring_mu_;
  // What a faulty ring read or write's completion says: -errno, or a short
  // count (a read's bytes past it, from scribble on, are overwritten).
  struct RingResult {
    int res;
    char *scribble;
  };
  // {ring, user_data} of a submitted read or write -> its completion's result.
  std::map<std::pair<struct io_uring *, uint64_t>, RingResult> ring_res_;  // guarded by ring_mu_
};

}  // namespace ufile::test
