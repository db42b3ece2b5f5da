// SPDX-License-Identifier: Apache-2.0
// Ring: one queue's submission and completion rings in host memory that
// device code fills and reaps (ufile/detail/device_queue.h). Either a real io_uring
// created with SQPOLL on that memory (the no-CPU path: the kernel's poller
// thread consumes the entries) or the same layout with no kernel behind it,
// served by ufile's proxy workers (devio/proxy.h).
// Thread-safety: built on one thread; afterwards the ring memory is shared
// with device code and the server by the protocol, and the accessors are
// read-only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "devio/host_region.h"
#include "ufile/device_types.h"

namespace ufile::devio {

struct RingOptions {
  uint32_t entries = 32;     // SQ entries (a power of two); the CQ has twice as many
  bool templates = false;    // keep the SQ array (one fixed entry per slot)
  uint32_t sq_idle_ms = 200;
  int sq_cpu = -1;           // pin the SQPOLL thread
  int attach_fd = -1;        // share this ring's SQPOLL thread
};

class Ring {
 public:
  ~Ring();
  Ring(const Ring &) = delete;
  Ring &operator=(const Ring &) = delete;

  // An io_uring with SQPOLL on our memory; nullptr with *why when the kernel
  // refuses (too old, SQPOLL not permitted, io_uring disabled).
  static std::unique_ptr<Ring> CreateUring(const RingOptions &o, std::string *why);
  // The same layout, served by the proxy.
  static std::unique_ptr<Ring> CreateProxy(const RingOptions &o, std::string *why);

  bool is_uring() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  Status RegisterFiles(const std::vector<int> &fds);
  Status RegisterBuffer(void *base, size_t len);
  // Maps both regions into the GPU (context current).
  Status MapToGpu();
  // Fills the queue view's ring fields (device addresses).
  void FillView(ufile_devio_queue_t *q) const;

  // Host pointers into the ring memory.
  uint32_t *sq_head() const { return U32(sq_head_); }
  uint32_t *sq_tail() const { return U32(sq_tail_); }
  uint32_t *sq_flags() const { return U32(sq_flags_); }
  uint32_t *sq_array() const { return array_ ? U32(array_) : nullptr; }
  uint32_t *cq_head() const { return U32(cq_head_); }
  uint32_t *cq_tail() const { return U32(cq_tail_); }
  ufile_devio_sqe_t *sqes() const { return static_cast<ufile_devio_sqe_t *>(sqes_->host()); }
  ufile_devio_cqe_t *cqes() const {
    return reinterpret_cast<ufile_devio_cqe_t *>(static_cast<char *>(rings_->host()) + cqes_);
  }
  uint32_t sq_entries() const { return sq_entries_; }
  uint32_t cq_entries() const { return cq_entries_; }

 private:
  Ring() = default;
  static Status MapRegions(const RingOptions &o, Ring *r);
  uint32_t *U32(uint32_t off) const {
    return reinterpret_cast<uint32_t *>(static_cast<char *>(rings_->host()) + off);
  }
  int fd_ = -1;
  std::unique_ptr<HostRegion> sqes_;
  std::unique_ptr<HostRegion> rings_;
  uint32_t sq_entries_ = 0, cq_entries_ = 0;
  uint32_t sq_head_ = 0, sq_tail_ = 0, sq_flags_ = 0, array_ = 0;
  uint32_t cq_head_ = 0, cq_tail_ = 0, cqes_ = 0;
};

}  // namespace ufile::devio
