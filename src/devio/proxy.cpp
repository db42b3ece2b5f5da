// SPDX-License-Identifier: Apache-2.0
#include "devio/proxy.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "devio/ring.h"
#include "engine/posix_io.h"
#include "sys/thread_name.h"
#include "ufile/detail/device_atomics.h"

namespace ufile::devio {
namespace {

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
    if (pq.ll) {
      q->since_scrub = std::make_unique<std::atomic<uint32_t>[]>(opt_.depth);
      for (uint32_t s = 0; s < opt_.depth; ++s) q->since_scrub[s].store(0);
    }
    queues_.push_back(std::move(q));
  }
  if (!opt_.ll_scrub_every) opt_.ll_scrub_every = 1;
  const char *t = std::getenv("UFILE_DEVIO_PROXY_TIMING");
  timing_ = t && *t == '1';
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
  if (timing_ && t_n_.load()) {
    const double n = static_cast<double>(t_n_.load());
    std::fprintf(stderr, "devio proxy: %llu entries, mean ns: taken->read %.0f, read->posted %.0f\n",
                 static_cast<unsigned long long>(t_n_.load()), t_read_.load() / n,
                 t_post_.load() / n);
  }
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

int64_t Proxy::LLSlot(const Queue &q, const ufile_devio_sqe_t &e) const {
  if (!q.q.ll) return -1;
  const uint64_t slot = e.user_data & 0xffffffffu;
  return slot < opt_.depth ? static_cast<int64_t>(slot) : -1;
}

bool Proxy::ScrubDue(Queue &q, uint32_t slot) {
  const uint32_t n = q.since_scrub[slot].load(std::memory_order_relaxed) + 1;
  const bool due = n >= opt_.ll_scrub_every;
  q.since_scrub[slot].store(due ? 0 : n, std::memory_order_relaxed);
  return due;
}

void Proxy::WriteLL(Queue &q, uint32_t slot, uint32_t flag, const uint8_t *buf, uint64_t bytes,
                    uint64_t lines, int32_t res) {
  auto *area = reinterpret_cast<uint64_t *>(q.q.ll + slot * UFILE_DEVIO_LL_STRIDE(opt_.ll_max));
  uint64_t *w = area + 2;
  const uint64_t f = static_cast<uint64_t>(flag) << 32;
  const uint64_t data_lines = (bytes + 7) / 8;  // buf is zero-padded to whole lines
  for (uint64_t j = 0; j < data_lines; ++j) {
    uint32_t lo, hi;
    std::memcpy(&lo, buf + 8 * j, 4);
    std::memcpy(&hi, buf + 8 * j + 4, 4);
    __atomic_store_n(&w[2 * j], f | lo, __ATOMIC_RELAXED);
    __atomic_store_n(&w[2 * j + 1], f | hi, __ATOMIC_RELAXED);
  }
  for (uint64_t j = data_lines; j < lines; ++j) {
    __atomic_store_n(&w[2 * j], f, __ATOMIC_RELAXED);
    __atomic_store_n(&w[2 * j + 1], f, __ATOMIC_RELAXED);
  }
  // Last, with release: once the header carries the flag, every line is
  // written and the proxy touches the area no more (until the slot's next
  // entry).
  __atomic_store_n(&area[1], f, __ATOMIC_RELAXED);
  __atomic_store_n(&area[0], f | static_cast<uint32_t>(res), __ATOMIC_RELEASE);
}

int32_t Proxy::ReadLL(const ufile_devio_sqe_t &e, uint8_t *buf) {
  int32_t res = 0;
  if (!(e.flags & UFILE_DEVIO_SQE_FIXED_FILE) || e.fd < 0 ||
      static_cast<size_t>(e.fd) >= files_.size()) {
    res = -EBADF;
  } else if (e.len > opt_.ll_max || e.off > static_cast<uint64_t>(INT64_MAX) - e.len) {
    res = -EINVAL;
  } else if (e.len) {
    const ProxyFile &f = files_[static_cast<size_t>(e.fd)];
    res = ResultOf(PreadFull(f.fd, buf, e.len, static_cast<off_t>(e.off), f.align));
  }
  const uint64_t bytes = res > 0 ? static_cast<uint64_t>(res) : 0;
  std::memset(buf + bytes, 0, (8 - bytes % 8) % 8);
  return res;
}

void Proxy::Loop(size_t index) {
  NameThisThread("ufile-proxy");
  uint64_t last_work = NowNs() / 1000;
  size_t start = index;
  // LL reads land here first (aligned for O_DIRECT descriptors).
  const size_t buf_len = (opt_.ll_max + 8 + 4095) / 4096 * 4096;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(
      opt_.ll_max ? static_cast<uint8_t *>(std::aligned_alloc(4096, buf_len)) : nullptr, &std::free);
  if (opt_.ll_max && !opt_.ll_staged && !buf)
    UFILE_LOG_ERROR("devio proxy: no memory for a %zu-byte LL buffer; LL reads fail with ENOMEM",
                    buf_len);
  while (!stop_.load(std::memory_order_acquire)) {
    bool did = false;
    for (size_t i = 0; i < queues_.size(); ++i) {
      Queue &q = *queues_[(start + i) % queues_.size()];
      ufile_devio_sqe_t e;
      if (!TakeOne(q, &e)) continue;
      did = true;
      const int64_t slot = LLSlot(q, e);
      // An LL read completes through its slot's LL area, never the CQ; in
      // lines mode without a bounce buffer it completes there with -ENOMEM.
      const bool ll_op = e.opcode == UFILE_DEVIO_OP_READ_LL && slot >= 0;
      const bool ll = ll_op && (opt_.ll_staged || buf);
      const uint64_t t0 = timing_ ? NowNs() : 0;
      // Staged LL reads land in the slot's own staging (page-aligned).
      uint8_t *dest = !ll ? nullptr
                      : opt_.ll_staged
                          ? reinterpret_cast<uint8_t *>(q.q.staging) +
                                static_cast<uint64_t>(slot) * (q.q.staging_len / opt_.depth)
                          : buf.get();
      const int32_t res = ll ? ReadLL(e, dest) : ll_op ? -ENOMEM : Execute(q, e);
      const uint64_t t1 = timing_ ? NowNs() : 0;
      requests_.fetch_add(1, std::memory_order_relaxed);
      if (res < 0) errors_.fetch_add(1, std::memory_order_relaxed);
      const auto us = static_cast<uint32_t>(slot);
      const uint32_t flag = 0x01000000u | (static_cast<uint32_t>(e.user_data >> 32) & 0xffffffu);
      const bool scrub = slot >= 0 && ScrubDue(q, us);
      if (ll_op) {
        const uint64_t bytes = ll && res > 0 ? static_cast<uint64_t>(res) : 0;
        if (opt_.ll_staged)
          WriteLL(q, us, flag, nullptr, 0, 0, res);  // the completion word alone
        else
          WriteLL(q, us, flag, buf.get(), bytes, scrub ? opt_.ll_max / 8 : (bytes + 7) / 8, res);
      } else {
        // Nobody reads the LL area of a slot serving another kind of entry.
        if (scrub) WriteLL(q, us, flag, nullptr, 0, opt_.ll_staged ? 0 : opt_.ll_max / 8, 0);
        Post(q, e.user_data, res);
      }
      if (timing_) {
        t_n_.fetch_add(1, std::memory_order_relaxed);
        t_read_.fetch_add(t1 - t0, std::memory_order_relaxed);
        t_post_.fetch_add(NowNs() - t1, std::memory_order_relaxed);
      }
      q.done.fetch_add(1, std::memory_order_release);
    }
    ++start;
    const uint64_t now = NowNs() / 1000;
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
