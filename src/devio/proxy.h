// SPDX-License-Identifier: Apache-2.0
// Proxy: the path for machines where the kernel will not poll rings in user
// memory (no SQPOLL, kernels before 6.5, seccomp). Host worker threads play
// the kernel's part on the very same rings, so device code is identical on
// both paths: they take published entries in order, move the bytes with the
// POSIX engine's loops (through the SysOps seam, where tests inject faults)
// and post completions. Entries are untrusted: only the set's files and the
// queue's own staging range are reachable; anything else completes with
// -EBADF, -EFAULT or -EINVAL.
// Thread-safety: internal; the counters may be read from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ufile/device_types.h"

namespace ufile::devio {

class Ring;

struct ProxyFile {
  int fd = -1;
  size_t align = 1;  // > 1 for an O_DIRECT descriptor
};

struct ProxyQueue {
  Ring *ring = nullptr;
  uint64_t staging = 0;  // host address of the queue's staging range
  uint64_t staging_len = 0;
  uint8_t *ll = nullptr;  // UFILE_DEVIO_OPT_LL: the slots' LL areas (host), else null
};

struct ProxyOptions {
  uint32_t threads = 1;
  uint32_t spin_us = 100;
  uint32_t poll_us = 50;
  uint32_t depth = 0;   // slots per queue
  uint32_t ll_max = 0;  // LL: largest read (its areas are UFILE_DEVIO_LL_STRIDE(ll_max) apart)
  bool ll_staged = false;  // LL: the data goes to the slot's staging; only the header is flagged
  // LL: every slot's whole area is rewritten with the current flag after at
  // most this many entries for the slot, so no word keeps a flag 2^24
  // generations old (which a later request of the slot would take as its own).
  uint32_t ll_scrub_every = 1u << 20;
};

class Proxy {
 public:
  Proxy(std::vector<ProxyQueue> queues, std::vector<ProxyFile> files, const ProxyOptions &o);
  ~Proxy();  // stops and joins (requests being executed finish first)
  Proxy(const Proxy &) = delete;
  Proxy &operator=(const Proxy &) = delete;

  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  // Entries of queue i completed (a CQE posted, or an LL header written): the
  // proxy touches none of their memory any more.
  uint64_t completed(size_t i) const { return queues_[i]->done.load(std::memory_order_acquire); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  struct Queue {
    ProxyQueue q;
    std::mutex sq_mu;
    uint32_t sq_head = 0;  // guarded by sq_mu
    std::mutex cq_mu;
    uint32_t cq_tail = 0;  // guarded by cq_mu
    std::atomic<uint64_t> done{0};
    // LL: entries seen per slot since its area was last rewritten whole (one
    // worker at a time serves a slot: the next entry needs the slot freed).
    std::unique_ptr<std::atomic<uint32_t>[]> since_scrub;
  };
  void Loop(size_t index);
  bool TakeOne(Queue &q, ufile_devio_sqe_t *out);
  int32_t Execute(const Queue &q, const ufile_devio_sqe_t &e);
  void Post(Queue &q, uint64_t user_data, int32_t res);
  // The slot an entry names when the queue has LL areas, else -1.
  int64_t LLSlot(const Queue &q, const ufile_devio_sqe_t &e) const;
  // Whether the slot's area is due a whole rewrite (counts the entry).
  bool ScrubDue(Queue &q, uint32_t slot);
  // Reads an LL entry's bytes into buf (zero-padded to whole lines); the result.
  int32_t ReadLL(const ufile_devio_sqe_t &e, uint8_t *buf);
  // Writes slot's area: lines for bytes [0, bytes) of buf, zero lines up to
  // `lines`, then the header (result), all with flag.
  void WriteLL(Queue &q, uint32_t slot, uint32_t flag, const uint8_t *buf, uint64_t bytes,
               uint64_t lines, int32_t res);

  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<ProxyFile> files_;
  ProxyOptions opt_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<bool> stop_{false};
  // UFILE_DEVIO_PROXY_TIMING=1: mean service phases printed at destruction
  // (measurement only): entries, ns taking->read, read->completion posted.
  bool timing_ = false;
  std::atomic<uint64_t> t_n_{0}, t_read_{0}, t_post_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

}  // namespace ufile::devio
