// SPDX-License-Identifier: Apache-2.0
// Graph500's validation of a BFS result, and the edge count its TEPS uses.
//
// A result is parent[v] for every vertex: the root's is itself, an unreached
// vertex's is -1. The rules checked:
//   1. the parents form a tree rooted at the root (no cycle, values in range);
//   2. each tree edge joins levels that differ by exactly one (levels are
//      taken from the tree, so this holds once 1 does);
//   3. every edge of the graph joins levels that differ by at most one, or
//      joins two unreached vertices;
//   4. the tree spans the root's whole component (no edge has exactly one
//      reached endpoint);
//   5. each vertex and its parent are joined by an edge of the graph.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "csr.h"

namespace g500 {

enum class BfsError {
  kNone,
  kSize,       // parent has the wrong length
  kRoot,       // the root's parent is not itself
  kRange,      // a parent outside [-1, nv)
  kCycle,      // following parents does not reach the root
  kNotAnEdge,  // rule 5
  kLevelGap,   // rule 3
  kComponent,  // rule 4
  kDepth,      // deeper than the edge-list validator can hold (validate_edges.h)
};

const char *BfsErrorName(BfsError e);

struct Validation {
  BfsError error = BfsError::kNone;
  std::string msg;       // which vertex or edge, when error != kNone
  uint64_t nedge = 0;    // input edges within the component (self-loops and duplicates counted)
  uint64_t reached = 0;  // vertices in the tree
  uint32_t depth = 0;    // the deepest level
  bool ok() const { return error == BfsError::kNone; }
};

// v in decimal, for the validators' messages.
inline std::string Decimal(uint64_t v) {
  return std::to_string(v);
}

// A failed validation: error e, described by msg.
inline Validation Invalid(BfsError e, std::string msg) {
  Validation r;
  r.error = e;
  r.msg = std::move(msg);
  return r;
}

// Levels from the parent array (root 0, unreached -1), a parallel round per
// level; error on a cycle, a parent chain through an unreached vertex, or an
// out-of-range parent.
Validation TreeLevels(const Csr &g, uint64_t root, const std::vector<int64_t> &parent,
                      std::vector<int32_t> *level, unsigned threads = 0);

// Every rule above, over `threads` threads (0: all).
Validation ValidateBfs(const Csr &g, uint64_t root, const std::vector<int64_t> &parent,
                       unsigned threads = 0);

}  // namespace g500
