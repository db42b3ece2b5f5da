// SPDX-License-Identifier: Apache-2.0
// Graph500's validation of BFS trees against the edge list regenerated from
// the generator (kronecker.h), independent of kernel 1: a construction that
// lost, added or moved an edge cannot make a wrong tree pass, because the
// CSR the searches read is never consulted.
//
// Add() checks a tree's shape (rules 1-2 of validate.h: the root is its own
// parent, parents in range, every parent chain reaches the root) and keeps
// its levels and parents; Check() then makes one pass over the regenerated
// edge list for every tree held (a batch), all threads: rule 3 (every
// edge joins levels at most one apart, or two unreached vertices), rule 4 (no
// edge has exactly one reached endpoint: the tree spans the root's
// component) and rule 5 (each vertex's parent edge is in the list; a vertex
// outside the component cannot have one), and counts each tree's edges.
//
// nedge, as the reference code counts for TEPS: the input edges with both
// endpoints in the tree, duplicates counted, self-loops not.
//
// Memory: (6 x stride + 8) bytes a vertex, stride being the capacity rounded
// up to 16: a level byte, a byte of the parent's label and the 32-bit parent
// a tree, and a bit a tree for the parent edges found. A pass compares an
// edge with a tree's parent only where the levels and the parent's byte
// match, so the parents are read about once a tree edge. Levels are bytes: a tree deeper than 253
// levels is refused (kDepth). Parents are kept in 32 bits: scale 32 at most, as the CSR. Not
// thread-safe; Check uses `threads` threads itself.
#pragma once

#include <cstdint>
#include <vector>

#include "csr.h"
#include "kronecker.h"
#include "validate.h"

namespace g500 {

class EdgeListValidator {
 public:
  static constexpr unsigned kMaxTrees = 64;
  static constexpr unsigned kMaxDepth = 253;

  // Trees a pass for a graph of `scale` within max_bytes: a multiple of 16,
  // 16 at least, kMaxTrees at most.
  static unsigned CapacityFor(uint32_t scale, uint64_t max_bytes);
  // The bytes the arrays take for `capacity` trees.
  static uint64_t BytesFor(uint32_t scale, unsigned capacity);

  // graph: the generator's parameters (scale, edgefactor, seed; threads for
  // Check and Add). -EINVAL through status() for a scale above 32 or bad
  // parameters, -ENOMEM when the arrays cannot be allocated.
  EdgeListValidator(const KroneckerParams &graph, unsigned capacity);
  const Status &status() const { return status_; }
  unsigned capacity() const { return capacity_; }
  unsigned held() const { return static_cast<unsigned>(roots_.size()); }
  bool full() const { return held() == capacity_; }

  // Checks parent's shape and keeps the tree for Check (only if its shape
  // is good). The result: an error (kSize, kRoot, kRange, kCycle, kDepth),
  // or ok with reached and depth filled and nedge still 0.
  Validation Add(uint64_t root, const std::vector<int64_t> &parent);

  // One pass of the regenerated edge list over the trees held: each one's
  // result in the order added (the first violation by edge index, the same
  // for any thread count), nedge filled. Empties the batch.
  std::vector<Validation> Check();

 private:
  Validation Levels(unsigned slot, uint64_t root, const std::vector<int64_t> &parent);
  KroneckerParams graph_;
  uint64_t nv_ = 0;
  unsigned capacity_ = 0, stride_ = 0;
  Status status_;
  BigArray<uint8_t> level_;    // a record of 2 x stride bytes a vertex (Lane in the .cpp)
  BigArray<uint32_t> parent_;  // [v * stride + tree]: a vertex's parents together
  BigArray<uint64_t> found_;   // bit tree: v's parent edge seen
  std::vector<uint64_t> roots_;
  std::vector<Validation> shape_;
};

// One tree against the regenerated edge list: a batch of one.
Validation ValidateAgainstEdgeList(const KroneckerParams &graph, uint64_t root,
                                   const std::vector<int64_t> &parent);

}  // namespace g500
