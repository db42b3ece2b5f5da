// SPDX-License-Identifier: Apache-2.0
// Graph500's Kronecker generator (initiator A = 0.57, B = 0.19, C = 0.19,
// D = 0.05): nv = 2^scale vertices, edgefactor * nv undirected input edges.
// Each edge sets one bit of both endpoints per level, choosing the quadrant
// with those probabilities; the vertex labels are then permuted at random, so
// that a label says nothing about its degree. Self-loops and duplicate edges
// are kept, as the specification's generator makes them.
//
// Every edge is a function of (seed, edge index) alone (a counter-based
// generator), so the graph is the same for any thread count. The edges are
// independent and identically distributed, so their order is already random:
// the specification's shuffle of the edge list changes nothing in
// distribution, and the CSR's sorted rows would hide it anyway.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common.h"
#include "csr.h"

namespace g500 {

struct KroneckerParams {
  uint32_t scale = 10;
  uint32_t edgefactor = 16;
  uint64_t seed = 1;
  unsigned threads = 0;  // 0: every hardware thread
};

// Edge i before the vertex permutation: (start, end), each below 2^scale.
std::pair<uint64_t, uint64_t> KroneckerEdge(uint32_t scale, uint64_t seed, uint64_t i);

// The vertex permutation of 2^scale labels for seed.
std::vector<uint32_t> VertexPermutation(uint32_t scale, uint64_t seed);

// The graph in memory, both directions of every edge stored, rows sorted.
// Construction holds the edge list too: 16 bytes an input edge at the peak
// with the column indices, plus 16 bytes a vertex.
// -EINVAL for a scale outside 1..32 or an edgefactor of 0, -ENOMEM when the
// arrays cannot be allocated.
Status GenerateKronecker(const KroneckerParams &p, Csr *out);

}  // namespace g500
