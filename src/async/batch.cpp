// SPDX-License-Identifier: Apache-2.0
#include "async/batch.h"

#include <chrono>
#include <cstring>
#include <exception>

#include "async/async_io.h"
#include "async/batch_stats.h"
#include "core/log.h"
#include "core/runtime.h"

namespace ufile {
namespace {

constexpr const char *kSubmit = "cuFileBatchIOSubmit";

// Enum fields read as ints: a user may store any value there, and loading an
// out-of-range enumerator is undefined behaviour.
template <class E>
int RawEnum(const E &field) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

Status RefuseEntry(const CUfileIOParams_t &p, const char *why, int value) {
  UFILE_LOG_ERROR("%s: entry with cookie %p refused: %s %d", kSubmit, p.cookie, why, value);
  return Status::Op(CU_FILE_INVALID_VALUE);
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
  const uint64_t submitted_at = stats::StartTimer();
  for (unsigned i = 0; i < nr; ++i) pending_.push_back(Entry{params[i], submitted_at});
  unreported_ += nr;
  if (!has_guard_) {
    guard_ = std::move(*g);
    has_guard_ = true;
  }
  // Posted under the lock: the guard (and so the pool) cannot go meanwhile.
  WorkerPool &pool = guard_.runtime().workers();
  const size_t want = std::min<size_t>(pending_.size(), std::max<size_t>(1, pool.size()));
  for (; drainers_ < want; ++drainers_) pool.Post([self = shared_from_this()] { self->Drain(); });
  return Status::Ok();
}

void Batch::Drain() {
  Driver::OpGuard dead;  // released after the lock
  std::unique_lock<std::mutex> lock(mu_);
  while (!pending_.empty()) {
    const CUfileIOParams_t p = pending_.front().params;
    const uint64_t submit_ns = pending_.front().submit_ns;
    pending_.pop_front();
    ++running_;
    Runtime &rt = guard_.runtime();
    lock.unlock();
    const CUfileIOEvents_t ev = RunEntry(rt, p);
    const bool uring = std::strcmp(rt.engine().name(), "io_uring") == 0;
    batch_stats::EntryDone(RawEnum(p.opcode) == CUFILE_WRITE, ev.status, ev.ret, submit_ns, uring);
    lock.lock();
    --running_;
    done_.push_back(ev);
    changed_.notify_all();
  }
  --drainers_;
  MaybeReleaseGuardLocked(&dead);
}

CUfileIOEvents_t Batch::RunEntry(Runtime &rt, const CUfileIOParams_t &p) {
  CUfileIOEvents_t ev{p.cookie, CUFILE_COMPLETE, 0};
  Result<size_t> r = size_t{0};
  const int mode = RawEnum(p.mode);
  const int op = RawEnum(p.opcode);
  try {
    if (mode != CUFILE_BATCH) {
      r = RefuseEntry(p, "mode", mode);
    } else if (op != CUFILE_READ && op != CUFILE_WRITE) {
      r = RefuseEntry(p, "opcode", op);
    } else {
      const auto &b = p.u.batch;
      r = RunIo(
          kSubmit, rt,
          IoArgs{p.fh, b.devPtr_base, b.size, b.file_offset, b.devPtr_offset, op == CUFILE_WRITE});
    }
  } catch (const std::exception &e) {  // a pool thread must not unwind
    UFILE_LOG_ERROR("%s: entry with cookie %p: internal error: %s", kSubmit, p.cookie, e.what());
    r = Status::Op(CU_FILE_INTERNAL_ERROR);
  }
  if (r.ok()) {
    ev.ret = *r;
  } else {
    ev.status = CUFILE_FAILED;
    ev.ret = static_cast<size_t>(NegativeError(r.status()));
  }
  return ev;
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
    batch_stats::EntryDone(RawEnum(e.params.opcode) == CUFILE_WRITE, CUFILE_CANCELED, 0, 0, false);
  }
  pending_.clear();
}

void Batch::Cancel() {
  Driver::OpGuard dead;
  std::unique_lock<std::mutex> lock(mu_);
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
