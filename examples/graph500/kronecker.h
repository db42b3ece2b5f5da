// SPDX-License-Identifier: Apache-2.0
// Graph500's Kronecker generator (initiator A = 0.57, B = 0.19, C = 0.19,
// D = 0.05): nv = 2^scale vertices, edgefactor * nv undirected input edges.
// Each edge sets one bit of both endpoints per level, choosing the quadrant
// with those probabilities; the vertex labels are then scrambled by a keyed
// bijection of [0, nv), so that a label says nothing about its degree.
// Self-loops and duplicate edges are kept, as the specification's generator
// makes them.
//
// Every edge is a function of (seed, edge index) alone (a counter-based
// generator), so the edge list is the same for any thread count, and any
// part of it can be computed again: the validator regenerates it instead of
// reading the graph built from it. The edges are independent and identically
// distributed, so their order is already random: the specification's shuffle
// of the edge list changes nothing in distribution.
//
// Labels are 48-bit in the edge list (PackedEdge, 12 bytes an edge, as the
// reference code packs them), so scale may reach 48 there; the CSR's 32-bit
// column indices limit a graph file to scale 32.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "common.h"
#include "csr.h"

namespace g500 {

inline constexpr uint32_t kMaxEdgeListScale = 48;

struct KroneckerParams {
  uint32_t scale = 10;
  uint32_t edgefactor = 16;
  uint64_t seed = 1;
  unsigned threads = 0;  // 0: every hardware thread
};

// An edge of the list: two 48-bit labels in 12 bytes.
struct PackedEdge {
  uint32_t lo0, lo1, hi;  // hi: bits 32..47 of v0, then of v1
  static PackedEdge Make(uint64_t v0, uint64_t v1) {
    return {static_cast<uint32_t>(v0), static_cast<uint32_t>(v1),
            static_cast<uint32_t>(((v0 >> 32) & 0xffff) | (((v1 >> 32) & 0xffff) << 16))};
  }
  uint64_t v0() const { return lo0 | (uint64_t{hi & 0xffff} << 32); }
  uint64_t v1() const { return lo1 | (uint64_t{hi >> 16} << 32); }
};
static_assert(sizeof(PackedEdge) == 12);

// Edge i before the labels are scrambled: (start, end), each below 2^scale.
std::pair<uint64_t, uint64_t> KroneckerEdge(uint32_t scale, uint64_t seed, uint64_t i);

// The labels: a bijection of [0, 2^scale) keyed by seed (multiplications by
// odd numbers, xor-shifts and additions, modulo 2^scale), no table.
class Scrambler {
 public:
  Scrambler(uint32_t scale, uint64_t seed);
  uint64_t operator()(uint64_t v) const {
    uint64_t x = v & mask_;
    for (unsigned r = 0; r < kRounds; r++) {
      x = (x * mul_[r]) & mask_;
      x ^= x >> shift_;
      x = (x + add_[r]) & mask_;
    }
    return x;
  }

 private:
  static constexpr unsigned kRounds = 4;
  uint64_t mask_;
  uint32_t shift_;
  uint64_t mul_[kRounds], add_[kRounds];
};

// The label of vertex v (below 2^scale).
inline uint64_t ScrambleVertex(uint32_t scale, uint64_t seed, uint64_t v) {
  return Scrambler(scale, seed)(v);
}

// The edge list's edges: edge i, labels scrambled.
class EdgeSource {
 public:
  EdgeSource(uint32_t scale, uint64_t seed) : scale_(scale), seed_(seed), label_(scale, seed) {}
  std::pair<uint64_t, uint64_t> operator()(uint64_t i) const {
    const auto [u, v] = KroneckerEdge(scale_, seed_, i);
    return {label_(u), label_(v)};
  }

 private:
  uint32_t scale_;
  uint64_t seed_;
  Scrambler label_;
};

// -EINVAL unless 1 <= scale <= max_scale and edgefactor >= 1.
Status CheckKroneckerParams(const KroneckerParams &p, uint32_t max_scale);

// The edge list: edgefactor * 2^scale edges written to out (that many),
// every thread of p.threads on its own range. -EINVAL for bad parameters or
// a wrong size of out.
Status GenerateEdges(const KroneckerParams &p, std::span<PackedEdge> out);

// Seconds spent making the edge list, and in kernel 1 (the edge list to the
// CSR the searches read).
struct BuildTimes {
  double generation_s = 0;
  double construction_s = 0;
};

// Generation and kernel 1 (construct.h), the graph in memory; the times in
// *times when given. Peak memory: the edge list (12 bytes an edge) and the
// CSR (8 bytes a vertex, 8 an edge); the edge list is freed on return.
// -EINVAL for a scale outside 1..32 or an edgefactor of 0, -ENOMEM when the
// arrays cannot be allocated.
Status GenerateKronecker(const KroneckerParams &p, Csr *out, BuildTimes *times = nullptr);

}  // namespace g500
