// SPDX-License-Identifier: Apache-2.0
#include "devio/proxy.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include "devio/ring.h"
#include "engine/posix_io.h"

namespace ufile::devio {
namespace {

uint64_t NowUs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

int32_t ResultOf(const Result<size_t> &r) {
  if (r.ok()) return static_cast<int32_t>(r.value());
  const Status &st = r.status();
  return st.kind() == Status::Kind::kErrno ? -st.code() : -EIO;
}

}  // namespace

Proxy::Proxy(std::vector<ProxyQueue> queues, std::vector<ProxyFile> files, const ProxyOptions &o)
    : files_(std::move(files)), opt_(o) {
  for (const ProxyQueue &pq : queues) {
    auto q = std::make_unique<Queue>();
    q->q = pq;
    queues_.push_back(std::move(q));
  }
  const uint32_t n = opt_.threads ? opt_.threads : 1;
  for (uint32_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

Proxy::~Proxy() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
  for (std::thread &t : threads_) t.join();
}

bool Proxy::TakeOne(Queue &q, ufile_devio_sqe_t *out) {
  std::unique_lock<std::mutex> lock(q.sq_mu, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  Ring &r = *q.q.ring;
  const uint32_t tail = __atomic_load_n(r.sq_tail(), __ATOMIC_ACQUIRE);
  if (tail == q.sq_head) return false;
  const uint32_t mask = r.sq_entries() - 1;
  uint32_t index = q.sq_head & mask;
  if (uint32_t *array = r.sq_array()) index = __atomic_load_n(&array[index], __ATOMIC_RELAXED) & mask;
  std::memcpy(out, &r.sqes()[index], sizeof *out);
  ++q.sq_head;
  __atomic_store_n(r.sq_head(), q.sq_head, __ATOMIC_RELEASE);
  return true;
}

int32_t Proxy::Execute(const Queue &q, const ufile_devio_sqe_t &e) {
  if (e.opcode == UFILE_DEVIO_OP_NOP) return 0;  // a position refused after it was taken
  const bool read = e.opcode == UFILE_DEVIO_OP_READ || e.opcode == UFILE_DEVIO_OP_READ_FIXED;
  const bool write = e.opcode == UFILE_DEVIO_OP_WRITE || e.opcode == UFILE_DEVIO_OP_WRITE_FIXED;
  if (!read && !write) return -EINVAL;
  if (!(e.flags & UFILE_DEVIO_SQE_FIXED_FILE) || e.fd < 0 ||
      static_cast<size_t>(e.fd) >= files_.size())
    return -EBADF;
  if (e.addr < q.q.staging || e.len > q.q.staging_len ||
      e.addr - q.q.staging > q.q.staging_len - e.len)
    return -EFAULT;
  if (e.len == 0) return 0;
  if (e.off > static_cast<uint64_t>(INT64_MAX) - e.len) return -EINVAL;
  const ProxyFile &f = files_[static_cast<size_t>(e.fd)];
  void *buf = reinterpret_cast<void *>(e.addr);
  const auto off = static_cast<off_t>(e.off);
  return read ? ResultOf(PreadFull(f.fd, buf, e.len, off, f.align))
              : ResultOf(PwriteFull(f.fd, buf, e.len, off, f.align));
}

void Proxy::Post(Queue &q, uint64_t user_data, int32_t res) {
  std::lock_guard<std::mutex> lock(q.cq_mu);
  Ring &r = *q.q.ring;
  // At most depth requests are in flight and the CQ holds twice as many, so
  // the ring cannot overflow; this wait only guards a broken consumer.
  while (q.cq_tail - __atomic_load_n(r.cq_head(), __ATOMIC_ACQUIRE) >= r.cq_entries()) {
    if (stop_.load(std::memory_order_relaxed)) return;
    std::this_thread::yield();
  }
  ufile_devio_cqe_t *c = &r.cqes()[q.cq_tail & (r.cq_entries() - 1)];
  c->user_data = user_data;
  c->res = res;
  c->flags = 0;
  ++q.cq_tail;
  __atomic_store_n(r.cq_tail(), q.cq_tail, __ATOMIC_RELEASE);
}

void Proxy::Loop(size_t index) {
  uint64_t last_work = NowUs();
  size_t start = index;
  while (!stop_.load(std::memory_order_acquire)) {
    bool did = false;
    for (size_t i = 0; i < queues_.size(); ++i) {
      Queue &q = *queues_[(start + i) % queues_.size()];
      ufile_devio_sqe_t e;
      if (!TakeOne(q, &e)) continue;
      const int32_t res = Execute(q, e);
      requests_.fetch_add(1, std::memory_order_relaxed);
      if (res < 0) errors_.fetch_add(1, std::memory_order_relaxed);
      Post(q, e.user_data, res);
      did = true;
    }
    ++start;
    const uint64_t now = NowUs();
    if (did) {
      last_work = now;
      continue;
    }
    if (now - last_work < opt_.spin_us) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      continue;
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::microseconds(opt_.poll_us ? opt_.poll_us : 1),
                 [this] { return stop_.load(); });
  }
}

}  // namespace ufile::devio
