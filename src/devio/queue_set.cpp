// SPDX-License-Identifier: Apache-2.0
#include "devio/queue_set.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "core/driver.h"
#include "core/runtime.h"
#include "gpu/cuda_api.h"
#include "ufile/detail/device_queue.h"

namespace ufile::devio {

static_assert(sizeof(ufile_devio_sqe_t) == 64, "SQE layout");
static_assert(sizeof(ufile_devio_cqe_t) == 16, "CQE layout");
static_assert(sizeof(ufile_devio_qctl_t) == 128, "queue control is one 128-byte line");
static_assert(sizeof(ufile_devio_queue_t) == 104, "queue view layout");
static_assert(sizeof(ufile_devio_file_t) == 24, "file entry layout");

namespace {

constexpr uint32_t kMaxQueues = 1024;
constexpr uint32_t kMaxDepth = 4096;
constexpr unsigned kMaxFiles = 256;
constexpr uint64_t kMaxStaging = 64ull << 20;
constexpr uint64_t kMaxRegisteredBuffer = 1ull << 30;  // io_uring's limit per buffer

size_t Align128(size_t n) { return (n + 127) / 128 * 128; }

uint32_t RoundPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int ErrnoOf(const Status &st) {
  switch (st.kind()) {
    case Status::Kind::kOk:
      return 0;
    case Status::Kind::kErrno:
      return -st.code();
    case Status::Kind::kCuda:
      return st.code() == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
    case Status::Kind::kOp:
      return st.is_op(CU_FILE_DRIVER_CLOSING) ? -ESHUTDOWN : -EINVAL;
  }
  return -EIO;
}

int DupFd(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 0); }

// SetLLScrubEveryForTests: 0, or how often sets created from now on rewrite
// their LL areas whole.
std::atomic<uint32_t> g_ll_scrub_every{0};

}  // namespace

int QueueSet::Normalize(ufile_devio_params_t *p) {
  ufile_devio_params_t d;
  ufile_devio_params_init(&d);
  if (p->size != sizeof(ufile_devio_params_t)) return -EINVAL;
  if (!p->num_queues || p->num_queues > kMaxQueues) return -EINVAL;
  if (!p->queue_depth || p->queue_depth > kMaxDepth) return -EINVAL;
  if (p->path > UFILE_DEVIO_PATH_PROXY) return -EINVAL;
  if (!p->staging_bytes || p->staging_bytes > kMaxStaging) return -EINVAL;
  if (p->options & ~(UFILE_DEVIO_OPT_TEMPLATES | UFILE_DEVIO_OPT_FIXED_BUFFERS |
                     UFILE_DEVIO_OPT_NARROW_COPY | UFILE_DEVIO_OPT_LL |
                     UFILE_DEVIO_OPT_LL_STAGED))
    return -EINVAL;
  if (p->device < -1) return -EINVAL;
  p->queue_depth = RoundPow2(p->queue_depth);
  p->staging_bytes = (p->staging_bytes + 4095) / 4096 * 4096;
  if (!p->timeout_us) p->timeout_us = d.timeout_us;
  if (!p->sq_idle_ms) p->sq_idle_ms = d.sq_idle_ms;
  if (!p->wake_poll_us) p->wake_poll_us = d.wake_poll_us;
  if (!p->proxy_threads) p->proxy_threads = std::min<uint32_t>(p->num_queues, 4);
  if (!p->destroy_wait_ms) p->destroy_wait_ms = d.destroy_wait_ms;
  if (p->sq_threads > p->num_queues) p->sq_threads = 0;
  return 0;
}

int QueueSet::OpenFiles(const CUfileHandle_t *handles, unsigned n) {
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return ErrnoOf(g.status());
  for (unsigned i = 0; i < n; ++i) {
    std::shared_ptr<FileHandle> fh = (*g)->handles().Lookup(handles[i]);
    if (!fh) {
      UFILE_LOG_ERROR("ufile_devio_create: handle %u (%p) is not registered", i, handles[i]);
      return -EBADF;
    }
    if (fh->is_fs_ops()) {
      UFILE_LOG_ERROR("ufile_devio_create: handle %u is a user-space file system's", i);
      return -EOPNOTSUPP;
    }
    ufile_devio_file_t f{};
    f.handle = reinterpret_cast<uintptr_t>(handles[i]);
    f.flags = (fh->readable() ? UFILE_DEVIO_FILE_READ : 0u) |
              (fh->writable() ? UFILE_DEVIO_FILE_WRITE : 0u);
    f.fd_direct = -1;
    int buffered = fh->fd();
    if (fh->direct()) {
      Result<int> b = fh->BufferedFd();
      if (!b.ok()) return ErrnoOf(b.status());
      buffered = b.value();
      const int d = DupFd(fh->fd());
      if (d < 0) return -errno;
      f.fd_direct = static_cast<int32_t>(fds_.size());
      f.align = static_cast<uint32_t>(fh->align());
      fds_.push_back(d);
      aligns_.push_back(fh->align());
    }
    const int b = DupFd(buffered);
    if (b < 0) return -errno;
    f.fd_buffered = static_cast<int32_t>(fds_.size());
    fds_.push_back(b);
    aligns_.push_back(1);
    files_.push_back(f);
  }
  return 0;
}

bool QueueSet::BuildUringRings(std::string *why) {
  const bool templates = p_.options & UFILE_DEVIO_OPT_TEMPLATES;
  const uint64_t per_queue = p_.queue_depth * p_.staging_bytes;
  bool fixed = (p_.options & UFILE_DEVIO_OPT_FIXED_BUFFERS) && per_queue <= kMaxRegisteredBuffer;
  for (uint32_t i = 0; i < p_.num_queues; ++i) {
    RingOptions o;
    o.entries = p_.queue_depth;
    o.templates = templates;
    o.sq_idle_ms = p_.sq_idle_ms;
    const bool shared = p_.sq_threads && i >= p_.sq_threads;
    if (shared) o.attach_fd = rings_[i % p_.sq_threads]->fd();
    if (!shared && p_.sq_cpu >= 0) {
      const auto ncpu = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      o.sq_cpu = (p_.sq_cpu + static_cast<int>(i)) % ncpu;
    }
    std::unique_ptr<Ring> r = Ring::CreateUring(o, why);
    if (!r) return false;
    Status st = r->RegisterFiles(fds_);
    if (!st.ok()) {
      *why = "IORING_REGISTER_FILES: " + st.ToString();
      return false;
    }
    if (fixed) {
      char *base = static_cast<char *>(staging_->host()) + i * per_queue;
      fixed = r->RegisterBuffer(base, per_queue).ok();
    }
    rings_.push_back(std::move(r));
  }
  if ((p_.options & UFILE_DEVIO_OPT_FIXED_BUFFERS) && !fixed) {
    UFILE_LOG_WARN("devio: staging not registered with io_uring; plain READ/WRITE used");
    p_.options &= ~UFILE_DEVIO_OPT_FIXED_BUFFERS;
  }
  return true;
}

void QueueSet::BuildProxyRings() {
  for (uint32_t i = 0; i < p_.num_queues; ++i) {
    RingOptions o;
    o.entries = p_.queue_depth;
    o.templates = p_.options & UFILE_DEVIO_OPT_TEMPLATES;
    std::string why;
    std::unique_ptr<Ring> r = Ring::CreateProxy(o, &why);
    if (!r) return;
    rings_.push_back(std::move(r));
  }
}

// Control block layout: queue views | file table | queue control | slot
// words | closing flag, each 128-byte aligned.
int QueueSet::BuildControl() {
  const uint32_t nq = p_.num_queues;
  off_queues_ = 0;
  off_files_ = Align128(nq * sizeof(ufile_devio_queue_t));
  off_qctl_ = Align128(off_files_ + files_.size() * sizeof(ufile_devio_file_t));
  off_slots_ = Align128(off_qctl_ + nq * sizeof(ufile_devio_qctl_t));
  off_closing_ = Align128(off_slots_ + static_cast<size_t>(nq) * p_.queue_depth * 8);
  Status st = control_.Allocate(off_closing_ + 128, ctx_);
  if (!st.ok()) return ErrnoOf(st);
  const uint64_t base = control_.base();
  const uint64_t per_queue = p_.queue_depth * p_.staging_bytes;
  std::vector<ufile_devio_queue_t> qs(nq);
  for (uint32_t i = 0; i < nq; ++i) {
    ufile_devio_queue_t &q = qs[i];
    rings_[i]->FillView(&q);
    q.staging = staging_->Device<uint8_t>(static_cast<char *>(staging_->host()) + i * per_queue);
    q.staging_host = reinterpret_cast<uint64_t>(staging_->host()) + i * per_queue;
    q.ctl = reinterpret_cast<ufile_devio_qctl_t *>(base + off_qctl_ + i * sizeof(ufile_devio_qctl_t));
    q.slots = reinterpret_cast<unsigned long long *>(base + off_slots_ +
                                                     static_cast<size_t>(i) * p_.queue_depth * 8);
    q.buf_index = 0;
    if (ll_) q.ll = ll_->Device<uint8_t>(static_cast<char *>(ll_->host()) + i * LLQueueBytes());
    if (q.sq_array) {  // templates: entry s belongs to slot s for good
      for (uint32_t s = 0; s < p_.queue_depth; ++s) {
        ufile_devio_sqe_t &e = rings_[i]->sqes()[s];
        std::memset(&e, 0, sizeof e);
        e.flags = UFILE_DEVIO_SQE_FIXED_FILE;
        e.buf_index = q.buf_index;
      }
    }
  }
  st = control_.Upload(off_queues_, qs.data(), nq * sizeof(ufile_devio_queue_t));
  if (st.ok() && !files_.empty())
    st = control_.Upload(off_files_, files_.data(), files_.size() * sizeof(ufile_devio_file_t));
  if (!st.ok()) return ErrnoOf(st);
  view_.abi_version = UFILE_DEVIO_ABI_VERSION;
  view_.num_queues = nq;
  view_.depth = p_.queue_depth;
  view_.num_files = static_cast<uint32_t>(files_.size());
  view_.staging_bytes = p_.staging_bytes;
  view_.timeout_ns = p_.timeout_us * 1000;
  view_.options = p_.options;
  view_.poll_ns = p_.poll_ns;
  view_.ll_max = ll_ ? LLMax() : 0;
  view_.queues = reinterpret_cast<const ufile_devio_queue_t *>(base + off_queues_);
  view_.files = reinterpret_cast<const ufile_devio_file_t *>(base + off_files_);
  view_.closing = reinterpret_cast<const uint32_t *>(base + off_closing_);
  return 0;
}

int QueueSet::Create(const CUfileHandle_t *handles, unsigned n, const ufile_devio_params_t &params,
                     std::unique_ptr<QueueSet> *out) {
  std::unique_ptr<QueueSet> s(new QueueSet());
  s->p_ = params;
  if (int r = Normalize(&s->p_)) return r;
  if (!handles || n == 0 || n > kMaxFiles) return -EINVAL;
  if (int r = s->OpenFiles(handles, n)) return r;
  if (int r = s->RetainDevice()) return r;
  ScopedContext scope(s->ctx_);
  Result<std::unique_ptr<HostRegion>> st =
      HostRegion::Map(s->p_.num_queues * s->p_.queue_depth * s->p_.staging_bytes);
  if (!st.ok()) return ErrnoOf(st.status());
  s->staging_ = std::move(st.value());
  uint32_t path = UFILE_DEVIO_PATH_PROXY;
  if (int r = s->BuildRings(&path)) return r;
  s->view_.path = path;
  if (s->ctx_) {
    Status m = s->staging_->MapToGpu();
    if (m.ok() && s->ll_) m = s->ll_->MapToGpu();
    for (size_t i = 0; m.ok() && i < s->rings_.size(); ++i) m = s->rings_[i]->MapToGpu();
    if (!m.ok()) return ErrnoOf(m);
  }
  if (int r = s->BuildControl()) return r;
  s->StartHelper(path);
  UFILE_LOG_INFO("devio: %u queues x %u slots x %llu bytes, %zu files, path %s%s, GPU %d",
                 s->p_.num_queues, s->p_.queue_depth,
                 static_cast<unsigned long long>(s->p_.staging_bytes), s->files_.size(),
                 ufile_devio_path_name(static_cast<int>(path)), s->ll_ ? " (LL reads)" : "",
                 s->p_.device);
  *out = std::move(s);
  return 0;
}

int QueueSet::RetainDevice() {
  if (p_.device < 0) return 0;
  CudaApi &cu = Cuda();
  if (!cu.available || p_.device >= cu.device_count) {
    UFILE_LOG_ERROR("ufile_devio_create: no CUDA device %d: %s", p_.device,
                    cu.available ? "ordinal out of range" : cu.why_unavailable.c_str());
    return -ENODEV;
  }
  CUdevice dev = 0;
  CUresult r = cu.cuDeviceGet(&dev, p_.device);
  if (r == CUDA_SUCCESS) r = cu.cuDevicePrimaryCtxRetain(&ctx_, dev);
  if (r != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("ufile_devio_create: primary context: %s", CudaErrorString(r).c_str());
    return -EIO;
  }
  return 0;
}

int QueueSet::BuildRings(uint32_t *path) {
  std::string why;
  *path = UFILE_DEVIO_PATH_PROXY;
  if (p_.path != UFILE_DEVIO_PATH_PROXY) {
    if (BuildUringRings(&why)) {
      *path = UFILE_DEVIO_PATH_NOCPU;
    } else if (p_.path == UFILE_DEVIO_PATH_NOCPU) {
      UFILE_LOG_ERROR("ufile_devio_create: no-CPU path unavailable: %s", why.c_str());
      return -EOPNOTSUPP;
    } else {
      UFILE_LOG_WARN("devio: no-CPU path unavailable (%s); using the proxy path", why.c_str());
      rings_.clear();
    }
  }
  if (*path == UFILE_DEVIO_PATH_NOCPU) {
    if (p_.options & UFILE_DEVIO_OPT_LL) {
      UFILE_LOG_INFO("devio: LL reads need the proxy path; not used on the no-CPU path");
      p_.options &= ~UFILE_DEVIO_OPT_LL;
    }
    return 0;
  }
  BuildProxyRings();
  if (rings_.size() != p_.num_queues) return -ENOMEM;
  if (p_.options & UFILE_DEVIO_OPT_LL) {
    Result<std::unique_ptr<HostRegion>> ll = HostRegion::Map(p_.num_queues * LLQueueBytes());
    if (!ll.ok()) return ErrnoOf(ll.status());
    ll_ = std::move(ll.value());
  }
  return 0;
}

void QueueSet::StartHelper(uint32_t path) {
  std::vector<Ring *> rings;
  for (auto &r : rings_) rings.push_back(r.get());
  if (path == UFILE_DEVIO_PATH_NOCPU) {
    waker_ = std::make_unique<Waker>(std::move(rings), p_.wake_poll_us);
    return;
  }
  std::vector<ProxyQueue> pq;
  const uint64_t per_queue = p_.queue_depth * p_.staging_bytes;
  for (uint32_t i = 0; i < p_.num_queues; ++i) {
    uint8_t *ll = ll_ ? static_cast<uint8_t *>(ll_->host()) + i * LLQueueBytes() : nullptr;
    pq.push_back(
        {rings[i], reinterpret_cast<uint64_t>(staging_->host()) + i * per_queue, per_queue, ll});
  }
  std::vector<ProxyFile> pf;
  for (size_t i = 0; i < fds_.size(); ++i) pf.push_back({fds_[i], aligns_[i]});
  ProxyOptions po;
  po.threads = p_.proxy_threads;
  po.spin_us = p_.proxy_spin_us;
  po.poll_us = p_.wake_poll_us;
  po.depth = p_.queue_depth;
  po.ll_max = ll_ ? LLMax() : 0;
  po.ll_staged = (p_.options & UFILE_DEVIO_OPT_LL_STAGED) != 0;
  const uint32_t scrub = g_ll_scrub_every.load(std::memory_order_relaxed);
  if (ll_ && scrub) po.ll_scrub_every = scrub;
  proxy_ = std::make_unique<Proxy>(std::move(pq), std::move(pf), po);
}

uint32_t QueueSet::SetLLScrubEveryForTests(uint32_t n) {
  return g_ll_scrub_every.exchange(n);
}

QueueSet::~QueueSet() { Teardown(); }

// Whether no device code holds a slot (unless force) and every submitted
// entry has completed; *what says what is still pending.
bool QueueSet::Idle(bool force, std::string *what) {
  if (!force) {
    std::vector<unsigned long long> words(static_cast<size_t>(p_.num_queues) * p_.queue_depth);
    Status st = control_.Download(off_slots_, words.data(), words.size() * 8);
    if (!st.ok()) {
      // A context that cannot copy can no longer run kernels either.
      UFILE_LOG_WARN("devio: slot check failed (%s); treating the GPU as idle",
                     st.ToString().c_str());
    } else {
      size_t held = 0;
      for (unsigned long long w : words) {
        const uint32_t state = SlotState(w);
        held += state != kSlotFree && state != kSlotAbandoned && state != kSlotAbandonedLL;
      }
      if (held) {
        *what = std::to_string(held) + " slots held by device code";
        return false;
      }
    }
  }
  for (size_t i = 0; i < rings_.size(); ++i) {
    const uint32_t sq = __atomic_load_n(rings_[i]->sq_tail(), __ATOMIC_ACQUIRE);
    // The proxy counts LL completions too (they post no CQE).
    const uint32_t cq = proxy_ ? static_cast<uint32_t>(proxy_->completed(i))
                               : __atomic_load_n(rings_[i]->cq_tail(), __ATOMIC_ACQUIRE);
    if (sq != cq) {
      *what = std::to_string(sq - cq) + " requests unfinished on queue " + std::to_string(i);
      return false;
    }
  }
  return true;
}

int QueueSet::Destroy(unsigned flags) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closing_) {
    const uint32_t one = 1;
    Status st = control_.Upload(off_closing_, &one, sizeof one);
    if (!st.ok()) UFILE_LOG_WARN("devio: could not set the closing flag: %s", st.ToString().c_str());
    closing_ = true;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(p_.destroy_wait_ms);
  std::string what;
  while (!Idle(flags & UFILE_DEVIO_DESTROY_FORCE, &what)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      UFILE_LOG_ERROR("ufile_devio_destroy: still in use (%s); nothing freed", what.c_str());
      return -EBUSY;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  Teardown();
  return 0;
}

void QueueSet::Teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  waker_.reset();
  proxy_.reset();
  ScopedContext scope(ctx_);
  rings_.clear();  // closes the rings, then unregisters and unmaps their memory
  staging_.reset();
  ll_.reset();
  control_.Free();
  for (int fd : fds_) close(fd);
  fds_.clear();
  if (ctx_) {
    CUdevice dev = 0;
    if (Cuda().cuDeviceGet(&dev, p_.device) == CUDA_SUCCESS) Cuda().cuDevicePrimaryCtxRelease(dev);
    ctx_ = nullptr;
  }
}

int QueueSet::Stats(ufile_devio_stats_t *out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (torn_down_) return -EINVAL;
  std::vector<ufile_devio_qctl_t> qc(p_.num_queues);
  Status st = control_.Download(off_qctl_, qc.data(), qc.size() * sizeof(ufile_devio_qctl_t));
  if (!st.ok()) return ErrnoOf(st);
  *out = {};
  for (const ufile_devio_qctl_t &c : qc) {
    out->submitted += c.submitted;
    out->reaped += c.reaped;
    out->timeouts += c.timeouts;
    out->stale += c.stale;
    out->resubmits += c.resubmits;
  }
  if (waker_) {
    out->wakeups = waker_->wakeups();
    out->cq_flushes = waker_->flushes();
  }
  if (proxy_) {
    out->proxy_requests = proxy_->requests();
    out->proxy_errors = proxy_->errors();
  }
  return 0;
}

bool QueueSet::ProbeNoCpu(std::string *why) {
  RingOptions o;
  o.entries = 2;
  o.sq_idle_ms = 1;
  return Ring::CreateUring(o, why) != nullptr;
}

}  // namespace ufile::devio
