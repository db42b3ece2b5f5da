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
};

struct ProxyOptions {
  uint32_t threads = 1;
  uint32_t spin_us = 100;
  uint32_t poll_us = 50;
};

class Proxy {
 public:
  Proxy(std::vector<ProxyQueue> queues, std::vector<ProxyFile> files, const ProxyOptions &o);
  ~Proxy();  // stops and joins (requests being executed finish first)
  Proxy(const Proxy &) = delete;
  Proxy &operator=(const Proxy &) = delete;

  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  struct Queue {
    ProxyQueue q;
    std::mutex sq_mu;
    uint32_t sq_head = 0;  // guarded by sq_mu
    std::mutex cq_mu;
    uint32_t cq_tail = 0;  // guarded by cq_mu
  };
  void Loop(size_t index);
  bool TakeOne(Queue &q, ufile_devio_sqe_t *out);
  int32_t Execute(const Queue &q, const ufile_devio_sqe_t &e);
  void Post(Queue &q, uint64_t user_data, int32_t res);

  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<ProxyFile> files_;
  ProxyOptions opt_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
};

}  // namespace ufile::devio
