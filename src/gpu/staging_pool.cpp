// SPDX-License-Identifier: Apache-2.0
#include "gpu/staging_pool.h"

#include <algorithm>
#include <cstdlib>

#include "base/log.h"
#include "engine/ring_registry.h"
#include "gpu/cuda_api.h"
#include "gpu/memory.h"
#include "gpu/pinned_budget.h"

namespace ufile {

constexpr size_t kPage = 4096;

namespace {
std::atomic<StagingHostAlloc> g_host_alloc{nullptr};
}  // namespace

StagingHostAlloc InstallStagingHostAlloc(StagingHostAlloc fn) {
  return g_host_alloc.exchange(fn);
}

StagingLease &StagingLease::operator=(StagingLease &&other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = other.pool_;
    cls_ = other.cls_;
    size_ = other.size_;
    buf_ = other.buf_;
    other.pool_ = nullptr;
    other.buf_ = StagingBuffer{};
  }
  return *this;
}

void StagingLease::Reset() {
  if (pool_ && buf_.data) pool_->Return(cls_, buf_);
  pool_ = nullptr;
  buf_ = StagingBuffer{};
}

StagingPool::StagingPool(const std::vector<size_t> &sizes_kb, const std::vector<size_t> &counts,
                         PrimaryContexts *ctxs, PinnedBudget *budget)
    : ctxs_(ctxs), budget_(budget) {
  for (size_t i = 0; i < sizes_kb.size() && i < counts.size(); ++i) {
    SizeClass c;
    c.size = std::max<size_t>(kPage, (sizes_kb[i] * 1024 + kPage - 1) / kPage * kPage);
    c.limit = std::max<size_t>(1, counts[i]);
    classes_.push_back(std::move(c));
  }
  if (classes_.empty()) classes_.push_back(SizeClass{1 << 20, 16, 0, {}});
  std::sort(classes_.begin(), classes_.end(),
            [](const SizeClass &a, const SizeClass &b) { return a.size < b.size; });
  slots_ = std::make_unique<Slot[]>(kSlots);
  for (size_t i = 0; i < kSlots; ++i) slots_[i].cached.assign(classes_.size(), Buffer{});
}

StagingPool::Slot &StagingPool::MySlot() {
  static std::atomic<size_t> next{0};
  thread_local const size_t index = next.fetch_add(1) % kSlots;
  return slots_[index];
}

bool StagingPool::TakeFromSlot(size_t cls, Buffer *out) {
  Slot &slot = MySlot();
  std::lock_guard<std::mutex> lock(slot.mu);
  if (!slot.cached[cls].data) return false;
  *out = slot.cached[cls];
  slot.cached[cls] = Buffer{};
  return true;
}

void StagingPool::Scavenge(size_t cls) {
  std::vector<Buffer> found;
  for (size_t i = 0; i < kSlots; ++i) {
    std::lock_guard<std::mutex> lock(slots_[i].mu);
    if (slots_[i].cached[cls].data) found.push_back(slots_[i].cached[cls]);
    slots_[i].cached[cls] = Buffer{};
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const Buffer &b : found) classes_[cls].free.push_back(b);
}

StagingPool::~StagingPool() { Release(); }

size_t StagingPool::largest() const { return classes_.back().size; }

size_t StagingPool::ClassFor(size_t size) const {
  for (size_t i = 0; i < classes_.size(); ++i)
    if (classes_[i].size >= size) return i;
  return classes_.size() - 1;
}

// Pinned staging is portable (every context may use it), so any GPU's primary
// context can allocate it: that of the calling thread's current GPU, else of
// the GPU used last, GPU 0's only when none is known. A context on a GPU the
// process does not use takes that GPU's memory (one per rank on a multi-GPU
// host). ctxs_ retains the primary context, so the buffer outlives whatever
// context the application makes current and later destroys.
Result<CUcontext> StagingPool::PinningContext() {
  CudaApi &api = Cuda();
  CUcontext current = nullptr;
  CUdevice device = 0;
  if (api.cuCtxGetDevice && api.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current &&
      api.cuCtxGetDevice(&device) == CUDA_SUCCESS) {
    for (int i = 0; i < api.device_count; ++i) {
      CUdevice d = 0;
      if (api.cuDeviceGet(&d, i) == CUDA_SUCCESS && d == device) {
        last_device_.store(i);
        break;
      }
    }
  }
  return ctxs_->Get(last_device_.load());
}

Result<StagingPool::Buffer> StagingPool::Allocate(size_t size) {
  const bool charged = !budget_ || budget_->TryCharge(PinnedBudget::kStaging, size);
  if (!charged) {
    if (!budget_logged_.exchange(true))
      UFILE_LOG_WARN("staging buffer not pinned nor registered with io_uring: %s; staging "
                     "continues in ordinary memory, copies will be slower",
                     budget_->Refusal(PinnedBudget::kStaging, size).c_str());
    return AllocatePlain(size, false);
  }
  CudaApi &api = Cuda();
  if (ctxs_ && api.available && !pin_failed_) {
    Result<CUcontext> ctx = PinningContext();
    if (ctx.ok()) {
      ScopedContext scope(*ctx);
      void *p = nullptr;
      CUresult res = api.cuMemHostAlloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
      if (res == CUDA_SUCCESS)
        return Buffer{p, true, RingRegistry::Get().PublishBuffer(p, size), budget_ != nullptr};
      UFILE_LOG_WARN("pinning a %zu-byte staging buffer failed (%s); staging continues in "
                     "unpinned memory, copies will be slower (check ulimit -l)",
                     size, CudaErrorString(res).c_str());
      pin_failed_ = true;
    }
  }
  Result<Buffer> buf = AllocatePlain(size, true);
  if (budget_ && (!buf.ok() || !buf->charged)) budget_->Release(PinnedBudget::kStaging, size);
  return buf;
}

Result<StagingPool::Buffer> StagingPool::AllocatePlain(size_t size, bool charge) {
  void *p = nullptr;
  StagingHostAlloc alloc = g_host_alloc.load();
  if ((alloc ? alloc(&p, kPage, size) : posix_memalign(&p, kPage, size)) != 0) {
    UFILE_LOG_ERROR("allocating a %zu-byte staging buffer failed", size);
    return Status::Op(CU_FILE_NOMEM_ERROR);
  }
  const int fixed = charge ? RingRegistry::Get().PublishBuffer(p, size) : kNoFixedSlot;
  return Buffer{p, false, fixed, budget_ && fixed != kNoFixedSlot};
}

void StagingPool::Free(const Buffer &buf, size_t size) {
  RingRegistry::Get().WithdrawBuffer(buf.fixed);  // no ring may hold its pages once it is freed
  if (buf.pinned)
    Cuda().cuMemFreeHost(buf.data);
  else
    std::free(buf.data);
  if (buf.charged) budget_->Release(PinnedBudget::kStaging, size);
}

Result<StagingLease> StagingPool::Lease(size_t size) { return LeaseImpl(size, true); }
Result<StagingLease> StagingPool::TryLease(size_t size) { return LeaseImpl(size, false); }

Result<StagingLease> StagingPool::LeaseImpl(size_t size, bool block) {
  const size_t cls = ClassFor(size);
  SizeClass &c = classes_[cls];
  StagingLease lease;
  lease.pool_ = this;
  lease.cls_ = cls;
  lease.size_ = c.size;
  Buffer mine;
  if (TakeFromSlot(cls, &mine)) {
    lease.buf_ = mine;
    return lease;
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!c.free.empty()) {
      lease.buf_ = c.free.back();
      c.free.pop_back();
      return lease;
    }
    if (c.allocated < c.limit) {
      Result<Buffer> buf = AllocateReserved(c, lock);
      if (!buf.ok()) {
        if (c.allocated == 0) return buf.status();
        c.limit = c.allocated;  // shrink the class to what could be allocated
        continue;               // and wait for a buffer to come back
      }
      lease.buf_ = *buf;
      return lease;
    }
    if (!block) return StagingLease();
    // Announce the wait first: from then on returns skip the slots.
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    lock.unlock();
    Scavenge(cls);
    lock.lock();
    // Also wakes when a failed allocation gave its reservation back (retry).
    returned_.wait(lock, [&] { return !c.free.empty() || c.allocated < c.limit; });
    waiters_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

Result<StagingPool::Buffer> StagingPool::AllocateReserved(SizeClass &c,
                                                          std::unique_lock<std::mutex> &lock) {
  ++c.allocated;  // pinning takes milliseconds: not under the lock
  lock.unlock();
  Result<Buffer> buf = Allocate(c.size);
  lock.lock();
  if (!buf.ok()) {
    --c.allocated;
    // A waiter may have counted on this reservation: wake it to retry the
    // allocation or fail, rather than wait for a return that never comes (it
    // waited forever when no buffer of the class existed).
    returned_.notify_all();
  }
  return buf;
}

size_t StagingPool::Prefill(size_t size, size_t n) {
  const size_t cls = ClassFor(size);
  SizeClass &c = classes_[cls];
  size_t made = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (made < n && c.allocated < c.limit) {
    Result<Buffer> buf = AllocateReserved(c, lock);
    if (!buf.ok()) break;
    c.free.push_back(*buf);
    ++made;
  }
  lock.unlock();
  if (made > 0) returned_.notify_all();
  return made;
}

void StagingPool::Return(size_t cls, const Buffer &buf) {
  {
    Slot &slot = MySlot();
    std::lock_guard<std::mutex> lock(slot.mu);
    if (!slot.cached[cls].data && waiters_.load(std::memory_order_seq_cst) == 0) {
      slot.cached[cls] = buf;
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    classes_[cls].free.push_back(buf);
  }
  returned_.notify_all();
}

void StagingPool::Release() {
  for (size_t cls = 0; cls < classes_.size(); ++cls) Scavenge(cls);
  std::lock_guard<std::mutex> lock(mu_);
  for (SizeClass &c : classes_) {
    if (c.free.size() != c.allocated)
      UFILE_LOG_ERROR("staging pool released with %zu buffers still leased",
                      c.allocated - c.free.size());
    for (const Buffer &b : c.free) Free(b, c.size);
    c.allocated -= c.free.size();
    c.free.clear();
  }
}

}  // namespace ufile
