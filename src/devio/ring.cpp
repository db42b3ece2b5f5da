// SPDX-License-Identifier: Apache-2.0
#include "devio/ring.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "sys/uring_raw.h"

namespace ufile::devio {
namespace {

// The kernel's ring header (struct io_rings) is 64 bytes; CQEs follow, then
// (without NO_SQARRAY) the SQ array, cache-line aligned. The proxy uses the
// same offsets.
constexpr uint32_t kHeader = 64;

size_t RingBytes(uint32_t sq, uint32_t cq, bool array) {
  size_t n = kHeader + static_cast<size_t>(cq) * sizeof(ufile_devio_cqe_t);
  if (array) n = (n + 63) / 64 * 64 + static_cast<size_t>(sq) * 4;
  return n;
}

std::string Errno(int err) { return strerror(err); }

}  // namespace

Ring::~Ring() {
  if (fd_ >= 0) close(fd_);  // before the memory goes: the ring unpins it
}

Status Ring::MapRegions(const RingOptions &o, Ring *r) {
  r->sq_entries_ = o.entries;
  r->cq_entries_ = o.entries * 2;
  Result<std::unique_ptr<HostRegion>> s = HostRegion::Map(o.entries * sizeof(ufile_devio_sqe_t));
  if (!s.ok()) return s.status();
  r->sqes_ = std::move(s.value());
  Result<std::unique_ptr<HostRegion>> g =
      HostRegion::Map(RingBytes(r->sq_entries_, r->cq_entries_, o.templates));
  if (!g.ok()) return g.status();
  r->rings_ = std::move(g.value());
  return Status::Ok();
}

std::unique_ptr<Ring> Ring::CreateUring(const RingOptions &o, std::string *why) {
  std::unique_ptr<Ring> r(new Ring());
  Status st = MapRegions(o, r.get());
  if (!st.ok()) {
    *why = "ring memory: " + st.ToString();
    return nullptr;
  }
  RawParams p{};
  p.flags = kSetupNoMmap | kSetupSqpoll | kSetupCqSize | (o.templates ? 0 : kSetupNoSqArray);
  p.cq_entries = r->cq_entries_;
  p.sq_thread_idle = o.sq_idle_ms;
  if (o.sq_cpu >= 0) {
    p.flags |= kSetupSqAff;
    p.sq_thread_cpu = static_cast<uint32_t>(o.sq_cpu);
  }
  if (o.attach_fd >= 0) {
    p.flags |= kSetupAttachWq;
    p.wq_fd = static_cast<uint32_t>(o.attach_fd);
  }
  p.sq_off.user_addr = reinterpret_cast<uint64_t>(r->sqes_->host());
  p.cq_off.user_addr = reinterpret_cast<uint64_t>(r->rings_->host());
  const int fd = Uring().setup(o.entries, &p);
  if (fd < 0) {
    *why = "io_uring_setup(SQPOLL|NO_MMAP" + std::string(o.templates ? "" : "|NO_SQARRAY") +
           "): " + Errno(-fd);
    if (fd == -EINVAL && r->rings_->size() > 4096)
      *why += " (kernels before 6.13 need the ring memory in one page: depth <= 64)";
    return nullptr;
  }
  r->fd_ = fd;
  if (p.sq_entries != o.entries || p.cq_entries != r->cq_entries_) {
    *why = "io_uring_setup gave other ring sizes than asked";
    return nullptr;
  }
  r->sq_head_ = p.sq_off.head;
  r->sq_tail_ = p.sq_off.tail;
  r->sq_flags_ = p.sq_off.flags;
  r->array_ = o.templates ? p.sq_off.array : 0;
  r->cq_head_ = p.cq_off.head;
  r->cq_tail_ = p.cq_off.tail;
  r->cqes_ = p.cq_off.cqes;
  const size_t end = std::max<size_t>(p.cq_off.cqes + r->cq_entries_ * sizeof(ufile_devio_cqe_t),
                                      o.templates ? p.sq_off.array + 4ull * o.entries : 0);
  if (end > r->rings_->size()) {
    *why = "the kernel's ring layout is larger than expected";
    return nullptr;
  }
  return r;
}

std::unique_ptr<Ring> Ring::CreateProxy(const RingOptions &o, std::string *why) {
  std::unique_ptr<Ring> r(new Ring());
  Status st = MapRegions(o, r.get());
  if (!st.ok()) {
    *why = "ring memory: " + st.ToString();
    return nullptr;
  }
  r->sq_head_ = 0;
  r->sq_tail_ = 4;
  r->cq_head_ = 8;
  r->cq_tail_ = 12;
  r->sq_flags_ = 36;
  r->cqes_ = kHeader;
  r->array_ = o.templates ? static_cast<uint32_t>((kHeader + r->cq_entries_ * 16 + 63) / 64 * 64)
                          : 0;
  return r;
}

Status Ring::RegisterFiles(const std::vector<int> &fds) {
  const int r = Uring().reg(fd_, kRegisterFiles, fds.data(), static_cast<unsigned>(fds.size()));
  if (r < 0) {
    UFILE_LOG_ERROR("devio: IORING_REGISTER_FILES: %s", strerror(-r));
    return Status::Errno(-r);
  }
  return Status::Ok();
}

Status Ring::RegisterBuffer(void *base, size_t len) {
  iovec iov{base, len};
  const int r = Uring().reg(fd_, kRegisterBuffers, &iov, 1);
  if (r < 0) {
    UFILE_LOG_WARN("devio: IORING_REGISTER_BUFFERS (%zu bytes): %s", len, strerror(-r));
    return Status::Errno(-r);
  }
  return Status::Ok();
}

Status Ring::MapToGpu() {
  UFILE_RETURN_IF_ERROR(sqes_->MapToGpu());
  return rings_->MapToGpu();
}

void Ring::FillView(ufile_devio_queue_t *q) const {
  q->sqes = sqes_->Device<ufile_devio_sqe_t>(sqes_->host());
  q->sq_array = array_ ? rings_->Device<uint32_t>(sq_array()) : nullptr;
  q->sq_tail = rings_->Device<uint32_t>(sq_tail());
  q->cq_head = rings_->Device<uint32_t>(cq_head());
  q->cq_tail = rings_->Device<uint32_t>(cq_tail());
  q->cqes = rings_->Device<ufile_devio_cqe_t>(cqes());
  q->sq_mask = sq_entries_ - 1;
  q->cq_mask = cq_entries_ - 1;
}

}  // namespace ufile::devio
