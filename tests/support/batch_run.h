// SPDX-License-Identifier: Apache-2.0
// RunBatchParams / RunBatch: submits I/Os (any memory / host buffers) as one
// cuFile batch and collects every event, bounded in time (a lost event fails
// the test instead of hanging it).
#pragma once

#include <cufile.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <utility>
#include <vector>

#include "support/guarded_buffer.h"

namespace ufile::test {

// One entry: op on fh, size bytes at file offset off, memory buf->data() + boff.
struct BatchIo {
  CUfileOpcode_t op;
  CUfileHandle_t fh;
  GuardedBuffer *buf;
  size_t size;
  off_t off;
  size_t boff;
};

// Submits p as given but for the cookies (set to each entry's index) and
// returns the events by index; at most 30 s for all (GetStatus polled with a
// 1 s timeout).
inline std::vector<CUfileIOEvents_t> RunBatchParams(CUfileBatchHandle_t batch,
                                                    std::vector<CUfileIOParams_t> p) {
  for (size_t i = 0; i < p.size(); ++i) p[i].cookie = reinterpret_cast<void *>(i);
  std::vector<CUfileIOEvents_t> out(p.size());
  std::vector<bool> seen(p.size(), false);
  const CUfileOpError submitted =
      cuFileBatchIOSubmit(batch, static_cast<unsigned>(p.size()), p.data(), 0).err;
  EXPECT_EQ(submitted, CU_FILE_SUCCESS);
  if (submitted != CU_FILE_SUCCESS) return out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  size_t got = 0;
  while (got < p.size() && std::chrono::steady_clock::now() < deadline) {
    std::vector<CUfileIOEvents_t> ev(p.size());
    unsigned nr = static_cast<unsigned>(p.size() - got);
    timespec one{1, 0};
    EXPECT_EQ(cuFileBatchIOGetStatus(batch, 1, &nr, ev.data(), &one).err, CU_FILE_SUCCESS);
    for (unsigned i = 0; i < nr; ++i) {
      const auto c = reinterpret_cast<uintptr_t>(ev[i].cookie);
      EXPECT_FALSE(seen[c]) << "entry " << c << " reported twice";
      seen[c] = true;
      out[c] = ev[i];
      ++got;
    }
  }
  EXPECT_EQ(got, p.size()) << "batch entries not reported within 30 s";
  return out;
}

// RunBatchParams of ios.
inline std::vector<CUfileIOEvents_t> RunBatch(CUfileBatchHandle_t batch,
                                              const std::vector<BatchIo> &ios) {
  std::vector<CUfileIOParams_t> p(ios.size());
  for (size_t i = 0; i < ios.size(); ++i) {
    p[i].mode = CUFILE_BATCH;
    p[i].opcode = ios[i].op;
    p[i].fh = ios[i].fh;
    p[i].u.batch.devPtr_base = ios[i].buf->data();
    p[i].u.batch.size = ios[i].size;
    p[i].u.batch.file_offset = ios[i].off;
    p[i].u.batch.devPtr_offset = static_cast<off_t>(ios[i].boff);
  }
  return RunBatchParams(batch, std::move(p));
}

}  // namespace ufile::test
