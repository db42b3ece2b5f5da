// SPDX-License-Identifier: Apache-2.0
// Flag slots for stream-ordered I/O, in pinned host memory: each slot holds
// two 32-bit words, [0] that a user stream waits on (cuStreamWaitValue32) and
// a worker sets when the operation is done, [1] that the stream writes
// (cuStreamWriteValue32) when it reaches and passes the operation. Slots are
// carved from 4 KiB pages leased from the
// runtime's staging pool (pinned, portable; with unified addressing the GPU
// reads them at their host address). The pages are leased while a slot is in
// use and go back to the staging pool when none is, so they never outlive the
// driver session: every slot belongs to an operation holding a
// Driver::OpGuard (see async/stream_ops.cpp).
// Thread-safety: all members may be called from any thread; Release() makes
// no CUDA call and never blocks for long.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "gpu/staging_pool.h"

namespace ufile {

class Runtime;

class FlagPool {
 public:
  static FlagPool &Get();

  // A slot (two words) holding 0, 0. CU_FILE_ASYNC_NOT_SUPPORTED when no pinned page can be
  // had (staging memory unpinned or exhausted): the caller falls back.
  // need_pinned: false only for a fake GPU (tests).
  Result<uint32_t *> Acquire(Runtime &rt, bool need_pinned = true);
  // Returns a slot nothing waits on any more.
  void Release(uint32_t *slot);
  size_t in_use() const;

 private:
  FlagPool() = default;
  mutable std::mutex mu_;
  std::vector<StagingLease> pages_;  // guarded by mu_
  std::vector<uint32_t *> free_;     // guarded by mu_
  size_t in_use_ = 0;                // guarded by mu_
};

}  // namespace ufile
