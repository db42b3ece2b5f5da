// SPDX-License-Identifier: Apache-2.0
// ufile-bench's device-initiated I/O kernels (built with nvcc when present):
// time-bounded read/write loops through a queue set, QD1 latency, and the
// dependent-offset walk with its host-driven counterpart's step kernel.
// The data is the bench pattern (pattern.h), generated and checked on the
// GPU, so writes keep the file valid and reads can be verified inline.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ufile/device_types.h"

namespace bench::devk {

enum class Mode : uint32_t { kBlock = 0, kWarp = 1 };

struct LoopArgs {
  Mode mode = Mode::kBlock;
  uint32_t write = 0;
  uint32_t random = 0;
  uint32_t verify = 0;
  uint32_t groups = 1;        // blocks
  uint32_t threads = 256;     // per block
  uint64_t io_size = 4096;
  uint64_t span = 0;          // offsets in [0, span)
  uint64_t seconds_ns = 0;    // run until then (per group) ...
  uint64_t total_ios = 0;     // ... or this many requests in all
  uint32_t lat_samples = 0;   // per block (block mode), 0: none
  uint32_t pad = 0;
};

struct LoopResult {
  uint64_t bytes = 0;
  uint64_t ios = 0;
  uint64_t errors = 0;
  int64_t first_error = 0;
  uint64_t mismatches = 0;    // verify: requests whose data differed from the pattern
  double seconds = 0;         // kernel time (events)
  std::vector<uint32_t> lat_ns;
};

// Runs the loop kernel once. 0, or -1 with *err.
int RunLoop(const ufile_devio_view_t &v, const LoopArgs &a, LoopResult *r, std::string *err);

// The dependent walk: walkers each follow steps nodes of 4 KiB starting at
// start_off(walker); the next node is a function of every byte of the one
// just read (NextNode). Device-driven: each walker is a warp reading through
// the queue set. Outputs the final offsets (host memory, walkers entries).
int RunChaseDevice(const ufile_devio_view_t &v, uint32_t walkers, uint32_t steps, uint64_t nodes,
                   uint64_t *final_offsets, double *seconds, std::string *err);

// The host-driven equivalent's GPU half: one launch per step computes each
// walker's next offset from its node (device memory, 4 KiB each, walker w at
// nodes_dev + 4096 w) into next_host (host-mapped, walkers entries).
class ChaseStep {
 public:
  ChaseStep() = default;
  ~ChaseStep();
  int Init(uint32_t walkers, std::string *err);
  char *nodes() const { return nodes_; }            // device memory, 4 KiB a walker
  char *pinned() const { return pinned_; }          // pinned host memory, same layout
  const uint64_t *next() const { return next_; }    // host-mapped
  // Launch + wait (spinning: the lowest latency a host loop gets); with
  // from_pinned, the nodes are first copied from pinned() on the same stream.
  int Step(uint64_t nodes, bool from_pinned, std::string *err);

 private:
  uint32_t walkers_ = 0;
  char *nodes_ = nullptr;
  char *pinned_ = nullptr;
  uint64_t *next_ = nullptr;
  uint64_t *next_dev_ = nullptr;
  void *stream_ = nullptr;
};

// The first node of walker w, and the node after one whose 512 words are
// given (host reference, same function as the GPU's).
uint64_t ChaseStart(uint32_t walker, uint64_t nodes);
uint64_t ChaseNext(const uint64_t *words, uint64_t nodes);

// Latencies (ns) of the protocol's primitives, measured on queue 0's
// staging (host memory) and scratch device memory.
int RunProbe(const ufile_devio_view_t &v, std::vector<std::pair<std::string, double>> *out,
             std::string *err);

// The phases of n QD1 LL reads by one block of a.threads (a's offsets and
// size): medians in ns from the call of the leader reaching the end of the
// submission, of the last poll round, of the return; and the poll rounds.
int RunTraceLL(const ufile_devio_view_t &v, const LoopArgs &a, uint32_t n,
               std::vector<std::pair<std::string, double>> *out, std::string *err);

// Whether the kernels were built (nvcc present at build time).
bool Built();

}  // namespace bench::devk
