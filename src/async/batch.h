// SPDX-License-Identifier: Apache-2.0
// Batches of cuFileBatchIO*: a bounded set of entries run on the runtime's
// worker pool, completed into a queue that cuFileBatchIOGetStatus drains.
//
// Submit copies the entries into the batch's pending queue and posts at most
// one drain task per pool thread; each drain task claims a group of pending
// entries at a time (a submission is cut into about one group per pool
// thread) and runs it (async/batch_group.h): small entries together, one
// engine submission and one GPU copy for the group, large ones through
// RunIo. So a batch uses no thread of its own and its entries run in
// parallel. Cancel reaches entries claimed but not started.
// A slot is used from submission until its event is reported; at most the
// set-up size are used at once.
// While entries are pending or running, the batch holds a Driver::OpGuard:
// cuFileDriverClose waits for them. A batch belongs to the driver session it
// was set up in; after a close it only accepts Destroy (and reports events
// already completed).
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cufile.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "async/batch_group.h"
#include "base/config.h"
#include "base/status.h"
#include "core/driver.h"

namespace ufile {

class Batch : public std::enable_shared_from_this<Batch> {
 public:
  Batch(unsigned capacity, std::shared_ptr<const Config> session);
  ~Batch();
  Batch(const Batch &) = delete;
  Batch &operator=(const Batch &) = delete;

  unsigned capacity() const { return capacity_; }
  // Queues nr entries. CU_FILE_INVALID_VALUE for nr 0 or over the set-up
  // size, a closed batch, or one of an earlier driver session;
  // CU_FILE_BATCH_FULL when fewer than nr slots are free (nothing queued).
  Status Submit(const CUfileIOParams_t *params, unsigned nr);
  // Moves up to *nr completed events to out and sets *nr. Waits for
  // min(min_nr, entries not yet reported) events: forever with a NULL
  // timeout, at most *timeout (relative) otherwise.
  void GetStatus(unsigned min_nr, unsigned *nr, CUfileIOEvents_t *out, const timespec *timeout);
  // Pending entries complete CUFILE_CANCELED; returns when no entry runs.
  void Cancel();
  // Cancel, then refuses everything. Called by Destroy.
  void Close();

 private:
  struct Entry {
    CUfileIOParams_t params;
    uint64_t submit_ns = 0;  // stats::StartTimer() at submission (0: stats off)
    unsigned group = 1;      // entries a drain task claims together from here
  };
  void Drain();
  // Moves the next group of pending entries to group.
  void ClaimLocked(std::vector<GroupEntry> *group, std::vector<uint64_t> *submit_ns);
  void CancelPendingLocked();
  // Hands the guard to *out when no entry is pending or running.
  void MaybeReleaseGuardLocked(Driver::OpGuard *out);
  bool SameSessionLocked(const Runtime &rt) const;

  const unsigned capacity_;
  const std::weak_ptr<const Config> session_;  // identity of the set-up session
  std::mutex mu_;
  std::condition_variable changed_;    // an event completed or the batch closed
  std::deque<Entry> pending_;          // guarded by mu_
  std::deque<CUfileIOEvents_t> done_;  // guarded by mu_; completed, unreported
  unsigned unreported_ = 0;            // guarded by mu_; slots in use
  unsigned running_ = 0;               // guarded by mu_
  unsigned drainers_ = 0;              // guarded by mu_; drain tasks posted, not finished
  bool closed_ = false;                // guarded by mu_
  std::atomic<uint64_t> cancels_{0};   // Cancel/Close calls so far (claimed entries check it)
  Driver::OpGuard guard_;              // guarded by mu_; held while entries are active
  bool has_guard_ = false;             // guarded by mu_
};

// The live batches: a CUfileBatchHandle_t is an id looked up here, never a
// pointer followed (like HandleTable). Process-wide; ids are never reused.
class BatchTable {
 public:
  static BatchTable &Get();
  CUfileBatchHandle_t Add(std::shared_ptr<Batch> batch);
  std::shared_ptr<Batch> Lookup(CUfileBatchHandle_t h) const;
  // Removes h and returns its batch (nullptr if h is not live).
  std::shared_ptr<Batch> Remove(CUfileBatchHandle_t h);

 private:
  BatchTable() = default;
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, std::shared_ptr<Batch>> by_id_;  // guarded by mu_
  uintptr_t next_ = 1;                                           // guarded by mu_
};

}  // namespace ufile
