// SPDX-License-Identifier: Apache-2.0
#include "async/batch.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "async/batch_stats.h"
#include "base/log.h"
#include "core/runtime.h"

namespace ufile {
namespace {

constexpr const char *kSubmit = "cuFileBatchIOSubmit";
constexpr unsigned kMaxGroup = 128;
// With io_uring a group's entries are in flight together, and each group
// costs a thread wake-up and a GPU launch: groups of 32 small entries give
// more IOPS per CPU than smaller ones (docs/ASYNC.md). The POSIX engine
// moves one entry at a time, so there the entries are spread over the pool
// threads instead.
constexpr unsigned kUringMinGroup = 32;

// The smallest group: UFILE_BATCH_GROUP_MIN=n if set (to measure the trade),
// else by engine as above.
unsigned MinGroup(const Engine &engine) {
  static const long forced = [] {
    const char *v = std::getenv("UFILE_BATCH_GROUP_MIN");
    return v ? std::strtol(v, nullptr, 10) : 0L;
  }();
  if (forced > 0) return static_cast<unsigned>(std::min<long>(forced, kMaxGroup));
  return engine.together() > 1 ? kUringMinGroup : 1;
}

}  // namespace

Batch::Batch(unsigned capacity, std::shared_ptr<const Config> session)
    : capacity_(capacity), session_(std::move(session)) {}

Batch::~Batch() = default;

bool Batch::SameSessionLocked(const Runtime &rt) const {
  const std::shared_ptr<const Config> now = rt.shared_config();
  return !session_.owner_before(now) && !now.owner_before(session_);
}

Status Batch::Submit(const CUfileIOParams_t *params, unsigned nr) {
  if (nr == 0 || nr > capacity_) {
    UFILE_LOG_ERROR("%s: %u entries, the batch was set up for 1 to %u", kSubmit, nr, capacity_);
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  // Declared before the lock: a guard not kept is released after unlocking.
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return g.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_ || !SameSessionLocked(g->runtime())) {
    UFILE_LOG_ERROR("%s: the batch was %s", kSubmit,
                    closed_ ? "destroyed" : "set up before the driver was closed");
    return Status::Op(CU_FILE_INVALID_VALUE);
  }
  if (nr > capacity_ - unreported_) {
    UFILE_LOG_ERROR(
        "%s: %u entries, but only %u of %u slots are free (reap events with "
        "cuFileBatchIOGetStatus first)",
        kSubmit, nr, capacity_ - unreported_, capacity_);
    return Status::Op(CU_FILE_BATCH_FULL);
  }
  // Posted under the lock: the guard (and so the pool) cannot go meanwhile.
  if (!has_guard_) {
    guard_ = std::move(*g);
    has_guard_ = true;
  }
  WorkerPool &pool = guard_.runtime().workers();
  const size_t threads = std::max<size_t>(1, pool.size());
  // About one group of this submission per pool thread, but not smaller
  // than MinGroup.
  const unsigned min_group = MinGroup(guard_.runtime().engine());
  const auto group = static_cast<unsigned>(
      std::clamp<size_t>((nr + threads - 1) / threads, min_group, kMaxGroup));
  const uint64_t submitted_at = stats::StartTimer();
  for (unsigned i = 0; i < nr; ++i) pending_.push_back(Entry{params[i], submitted_at, group});
  unreported_ += nr;
  const size_t groups = (pending_.size() + group - 1) / group;
  const size_t want = std::min(groups, threads);
  for (; drainers_ < want; ++drainers_) pool.Post([self = shared_from_this()] { self->Drain(); });
  return Status::Ok();
}

void Batch::ClaimLocked(std::vector<GroupEntry> *group, std::vector<uint64_t> *submit_ns) {
  group->clear();
  submit_ns->clear();
  const unsigned want = pending_.front().group;
  size_t bytes = 0;
  while (!pending_.empty() && group->size() < want) {
    const Entry &e = pending_.front();
    const bool small = Groupable(e.params);
    const size_t cost = GroupCost(e.params);
    // A large entry runs alone; a group stages a bounded number of bytes.
    if (!group->empty() && (!small || bytes + cost > kGroupStageBytes)) break;
    bytes += cost;
    group->push_back(GroupEntry{e.params, {}, false});
    submit_ns->push_back(e.submit_ns);
    pending_.pop_front();
    if (!small) break;
  }
}

void Batch::Drain() {
  Driver::OpGuard dead;  // released after the lock
  std::vector<GroupEntry> group;
  std::vector<uint64_t> submit_ns;
  std::unique_lock<std::mutex> lock(mu_);
  while (!pending_.empty()) {
    ClaimLocked(&group, &submit_ns);
    running_ += static_cast<unsigned>(group.size());
    Runtime &rt = guard_.runtime();
    const uint64_t epoch = cancels_.load(std::memory_order_acquire);
    lock.unlock();
    RunGroup(rt, group.data(), group.size(),
             [&] { return cancels_.load(std::memory_order_acquire) != epoch; });
    const bool uring = std::strcmp(rt.engine().name(), "io_uring") == 0;
    for (size_t i = 0; i < group.size(); ++i) {
      const CUfileIOEvents_t &ev = group[i].event;
      batch_stats::EntryDone(batch_stats::Opcode(group[i].params) == CUFILE_WRITE, ev.status,
                             ev.ret, submit_ns[i], uring);
    }
    lock.lock();
    running_ -= static_cast<unsigned>(group.size());
    for (const GroupEntry &e : group) done_.push_back(e.event);
    changed_.notify_all();
  }
  --drainers_;
  MaybeReleaseGuardLocked(&dead);
}

void Batch::MaybeReleaseGuardLocked(Driver::OpGuard *out) {
  if (!has_guard_ || !pending_.empty() || running_ > 0) return;
  *out = std::move(guard_);
  has_guard_ = false;
}

void Batch::GetStatus(unsigned min_nr, unsigned *nr, CUfileIOEvents_t *out,
                      const timespec *timeout) {
  using Clock = std::chrono::steady_clock;
  const unsigned max = *nr;
  std::unique_lock<std::mutex> lock(mu_);
  // Never wait for events that cannot come: min_nr is capped by the
  // entries submitted and not yet reported.
  auto ready = [&] { return closed_ || done_.size() >= std::min<size_t>(min_nr, unreported_); };
  if (!timeout) {
    changed_.wait(lock, ready);
  } else {
    const auto wait =
        std::chrono::seconds(timeout->tv_sec) + std::chrono::nanoseconds(timeout->tv_nsec);
    changed_.wait_until(lock, Clock::now() + wait, ready);
  }
  unsigned n = 0;
  for (; n < max && !done_.empty(); ++n) {
    out[n] = done_.front();
    done_.pop_front();
  }
  unreported_ -= n;
  *nr = n;
}

void Batch::CancelPendingLocked() {
  for (const Entry &e : pending_) {
    done_.push_back(CUfileIOEvents_t{e.params.cookie, CUFILE_CANCELED, 0});
    batch_stats::EntryDone(batch_stats::Opcode(e.params) == CUFILE_WRITE, CUFILE_CANCELED, 0, 0,
                           false);
  }
  pending_.clear();
}

void Batch::Cancel() {
  Driver::OpGuard dead;
  std::unique_lock<std::mutex> lock(mu_);
  cancels_.fetch_add(1, std::memory_order_acq_rel);
  CancelPendingLocked();
  // Entries already running finish (their events report it): after this
  // returns, no entry of the batch touches a file or a buffer.
  changed_.notify_all();
  changed_.wait(lock, [this] { return running_ == 0; });
  MaybeReleaseGuardLocked(&dead);
}

void Batch::Close() {
  Driver::OpGuard dead;
  std::unique_lock<std::mutex> lock(mu_);
  closed_ = true;
  cancels_.fetch_add(1, std::memory_order_acq_rel);
  CancelPendingLocked();
  changed_.notify_all();
  changed_.wait(lock, [this] { return running_ == 0; });
  done_.clear();
  unreported_ = 0;
  MaybeReleaseGuardLocked(&dead);
}

BatchTable &BatchTable::Get() {
  static BatchTable *table = new BatchTable();  // never destroyed, like Driver
  return *table;
}

CUfileBatchHandle_t BatchTable::Add(std::shared_ptr<Batch> batch) {
  std::lock_guard<std::mutex> lock(mu_);
  // Multiples of 16 plus 2: never an aligned pointer, never a file handle id.
  const uintptr_t id = (next_++ << 4) | 2;
  by_id_.emplace(id, std::move(batch));
  return reinterpret_cast<CUfileBatchHandle_t>(id);
}

std::shared_ptr<Batch> BatchTable::Lookup(CUfileBatchHandle_t h) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(reinterpret_cast<uintptr_t>(h));
  return it == by_id_.end() ? nullptr : it->second;
}

std::shared_ptr<Batch> BatchTable::Remove(CUfileBatchHandle_t h) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(reinterpret_cast<uintptr_t>(h));
  if (it == by_id_.end()) return nullptr;
  std::shared_ptr<Batch> b = std::move(it->second);
  by_id_.erase(it);
  return b;
}

}  // namespace ufile
