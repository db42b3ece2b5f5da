// SPDX-License-Identifier: Apache-2.0
// One mode's searches as graph500-bfs records them: each search's time and
// tree; the trees validated in batches against the edge list regenerated
// from the generator (validate_edges.h), one pass of it for up to 64 trees,
// the batch sized to max_bytes (default a quarter of the machine's memory)
// at most (and to the trees to validate, in steps of 16); each run's
// nedge and validation time (its share of the pass) for the output block.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "csr.h"
#include "stats.h"
#include "validate_edges.h"

namespace g500 {

class ValidatedRuns {
 public:
  // g: the graph searched (its header names the generator's parameters).
  // The first `validate` trees are validated; the others' nedge is counted
  // from g the same way (non-loop edges of the reached vertices). max_bytes:
  // the validator's arrays at most (0: a quarter of the machine's memory); a
  // batch holds 16 trees however small it is.
  ValidatedRuns(const Csr &g, unsigned threads, uint64_t validate, uint64_t max_bytes = 0);

  // A search from root that took `seconds`, its tree in parent. An error
  // (-EINVAL, naming the root, the rule and the edge or vertex) when this
  // tree or one held with it is invalid; -ENOMEM when the validator's arrays
  // cannot be had.
  Status Add(uint64_t root, double seconds, const std::vector<int64_t> &parent);
  // Validates the trees still held. The same errors.
  Status Finish();

  const std::vector<RunRecord> &records() const { return records_; }
  uint64_t validated() const { return validated_; }
  uint64_t passes() const { return passes_; }
  // Seconds spent validating: levels from the trees, and the passes.
  double seconds() const { return seconds_; }
  // The validator's arrays: a pass holds this many trees in this many bytes.
  unsigned batch() const { return batch_; }
  uint64_t batch_bytes() const { return EdgeListValidator::BytesFor(g_.header().scale, batch_); }

 private:
  Status Check();
  const Csr &g_;
  KroneckerParams graph_;
  uint64_t validate_;
  unsigned batch_;
  std::unique_ptr<EdgeListValidator> val_;  // made at the first tree
  std::vector<size_t> held_;                // records_ index of each tree held
  std::vector<uint64_t> held_roots_;
  std::vector<RunRecord> records_;
  uint64_t validated_ = 0, passes_ = 0;
  double seconds_ = 0;
};

// The fields graph500-bfs adds to a mode's block: setup_time (opening the
// mode: GPU arrays uploaded, queues, threads; not kernel 1), bytes_read,
// reads, cpu_cores, and validation (how many trees passed, in how many
// passes of the regenerated edge list, the validator's memory).
void PrintExtraFields(FILE *out, double setup_s, uint64_t bytes_read, uint64_t reads,
                      double cpu_cores, const ValidatedRuns &runs);

}  // namespace g500
