// SPDX-License-Identifier: Apache-2.0
#include "validate_edges.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <mutex>
#include <string>
#include <tuple>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace g500 {
namespace {

constexpr uint8_t kUnreached = 0xff, kPending = 0xfe;
constexpr uint64_t kBlockEdges = 1ull << 16;
constexpr unsigned kLanes = 16;

// A byte of a vertex's label: a tree keeps its parent's beside each level,
// so that an edge is compared with a parent (a load from memory) only when
// the tags match.
inline uint8_t Tag(uint64_t v) {
  return static_cast<uint8_t>((v * 0x9e3779b97f4a7c15ull) >> 56);
}

// A vertex's record: for each group of 16 trees, their 16 levels then the 16
// parent tags; tree t's level is at Lane(t), its tag 16 bytes on.
inline uint64_t Lane(unsigned t) {
  return t / kLanes * 2 * kLanes + t % kLanes;
}

// 16 trees at the two ends a and b of an edge, as bit masks (bit i: tree
// i); ra and rb point at the group's levels, the parent tags 16 bytes on.
struct Masks {
  uint32_t bad;   // one end reached, not the other; or levels two or more apart
  uint32_t up;    // a = b + 1 and a's parent tag is b's: b may be a's parent
  uint32_t down;  // b = a + 1 and b's parent tag is a's
};

// Adds one, in acc, for each tree with both ends reached.
Masks Compare(const uint8_t *ra, const uint8_t *rb, uint8_t tag_a, uint8_t tag_b, uint8_t *acc) {
#ifdef __SSE2__
  const auto load = [](const uint8_t *p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  };
  const __m128i x = load(ra), y = load(rb);
  const __m128i ff = _mm_set1_epi8(static_cast<char>(kUnreached)), one = _mm_set1_epi8(1);
  const __m128i ux = _mm_cmpeq_epi8(x, ff), uy = _mm_cmpeq_epi8(y, ff);
  const __m128i both = _mm_andnot_si128(_mm_or_si128(ux, uy), _mm_set1_epi8(-1));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(acc), _mm_sub_epi8(load(acc), both));
  const auto mask = [](__m128i m) { return static_cast<uint32_t>(_mm_movemask_epi8(m)); };
  const uint32_t bm = mask(both);
  const uint32_t up = mask(_mm_cmpeq_epi8(x, _mm_add_epi8(y, one))) & bm;
  const uint32_t down = mask(_mm_cmpeq_epi8(y, _mm_add_epi8(x, one))) & bm;
  const uint32_t same = mask(_mm_cmpeq_epi8(x, y)) & bm;
  const uint32_t tag_up =
      mask(_mm_cmpeq_epi8(load(ra + kLanes), _mm_set1_epi8(static_cast<char>(tag_b))));
  const uint32_t tag_down =
      mask(_mm_cmpeq_epi8(load(rb + kLanes), _mm_set1_epi8(static_cast<char>(tag_a))));
  return {mask(_mm_xor_si128(ux, uy)) | (bm & ~(up | down | same)), up & tag_up, down & tag_down};
#else
  Masks m{0, 0, 0};
  for (unsigned i = 0; i < kLanes; i++) {
    const bool rx = ra[i] != kUnreached, ry = rb[i] != kUnreached;
    if (rx != ry) m.bad |= 1u << i;
    if (!rx || !ry) continue;
    acc[i]++;
    const int d = int{ra[i]} - int{rb[i]};
    if (d > 1 || d < -1) m.bad |= 1u << i;
    if (d == 1 && ra[kLanes + i] == tag_b) m.up |= 1u << i;
    if (d == -1 && rb[kLanes + i] == tag_a) m.down |= 1u << i;
  }
  return m;
#endif
}

// A tree's first violation by edge index.
struct EdgeFail {
  uint64_t edge = UINT64_MAX;
  uint64_t u = 0, v = 0;
};

struct WorkerState {
  uint64_t nedge[EdgeListValidator::kMaxTrees] = {};
  EdgeFail fail[EdgeListValidator::kMaxTrees];
};

// Why v's parents do not give it a level: they reach an unreached vertex,
// loop, or go deeper than kMaxDepth.
Validation ChainError(uint64_t v, const std::vector<int64_t> &parent,
                      const std::vector<uint8_t> &lv) {
  std::vector<bool> seen(parent.size());
  uint64_t x = v, steps = 0;
  while (lv[x] == kPending && !seen[x]) {
    seen[x] = true;
    x = static_cast<uint64_t>(parent[x]);
    steps++;
  }
  if (lv[x] == kUnreached)
    return Invalid(BfsError::kCycle, "vertex " + Decimal(v) +
                                         ": its parents lead to unreached vertex " + Decimal(x) +
                                         ", not to the root");
  if (lv[x] == kPending)
    return Invalid(BfsError::kCycle,
                   "vertex " + Decimal(v) + ": its parents loop at vertex " + Decimal(x));
  return Invalid(BfsError::kDepth, "vertex " + Decimal(v) + " is " + Decimal(steps + lv[x]) +
                                       " levels deep, deeper than the validator's limit of " +
                                       Decimal(EdgeListValidator::kMaxDepth));
}

}  // namespace

uint64_t EdgeListValidator::BytesFor(uint32_t scale, unsigned capacity) {
  const uint64_t stride = (capacity + kLanes - 1) / kLanes * kLanes;
  return (uint64_t{1} << scale) * (6 * stride + 8);
}

unsigned EdgeListValidator::CapacityFor(uint32_t scale, uint64_t max_bytes) {
  unsigned c = kMaxTrees;
  while (c > kLanes && BytesFor(scale, c) > max_bytes) c -= kLanes;
  return c;
}

EdgeListValidator::EdgeListValidator(const KroneckerParams &graph, unsigned capacity)
    : graph_(graph) {
  status_ = CheckKroneckerParams(graph, kMaxCsrScale);
  if (status_.ok() && (capacity == 0 || capacity > kMaxTrees))
    status_ = Status::Error(-EINVAL, "validator capacity must be 1.." + Decimal(kMaxTrees) +
                                         " trees, not " + Decimal(capacity));
  if (!status_.ok()) return;
  nv_ = uint64_t{1} << graph.scale;
  capacity_ = capacity;
  stride_ = (capacity + kLanes - 1) / kLanes * kLanes;
  status_ = BigArray<uint8_t>::Allocate(nv_ * 2 * stride_, &level_);
  if (status_.ok()) status_ = BigArray<uint32_t>::Allocate(nv_ * stride_, &parent_);
  if (status_.ok()) status_ = BigArray<uint64_t>::Allocate(nv_, &found_);
}

// Each vertex's level, walking up its parents to a vertex whose level is
// known and setting the levels on the way back: every vertex is set once
// (threads that meet on a path write the same values). 0xfe: not yet known.
Validation EdgeListValidator::Levels(unsigned slot, uint64_t root,
                                     const std::vector<int64_t> &parent) {
  const uint64_t nv = nv_, S = stride_;
  std::vector<uint8_t> lv(nv);
  std::atomic<uint64_t> bad_range{UINT64_MAX}, bad_chain{UINT64_MAX};
  auto lowest = [](std::atomic<uint64_t> &at, uint64_t v) {
    uint64_t cur = at.load();
    while (v < cur && !at.compare_exchange_weak(cur, v)) {
    }
  };
  ParallelFor(nv, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t v = b; v < e; v++) {
      const int64_t p = parent[v];
      if (p < -1 || p >= static_cast<int64_t>(nv)) lowest(bad_range, v);
      lv[v] = p < 0 ? kUnreached : kPending;
    }
  });
  if (bad_range.load() != UINT64_MAX) {
    const uint64_t v = bad_range.load();
    return Invalid(BfsError::kRange,
                   "vertex " + Decimal(v) + " has parent " + std::to_string(parent[v]));
  }
  lv[root] = 0;
  ParallelFor(nv, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
    std::vector<uint64_t> path;
    for (uint64_t v = b; v < e; v++) {
      uint64_t x = v;
      uint8_t l = std::atomic_ref<uint8_t>(lv[x]).load(std::memory_order_relaxed);
      path.clear();
      while (l == kPending && path.size() <= kMaxDepth) {
        path.push_back(x);
        x = static_cast<uint64_t>(parent[x]);
        l = std::atomic_ref<uint8_t>(lv[x]).load(std::memory_order_relaxed);
      }
      if (path.empty()) continue;
      if (l == kPending || l == kUnreached || l + path.size() > kMaxDepth) {
        lowest(bad_chain, v);
        continue;
      }
      for (size_t i = path.size(); i-- > 0;)
        std::atomic_ref<uint8_t>(lv[path[i]])
            .store(static_cast<uint8_t>(l + path.size() - i), std::memory_order_relaxed);
    }
  });
  if (bad_chain.load() != UINT64_MAX) return ChainError(bad_chain.load(), parent, lv);
  Validation r;
  std::mutex mu;
  uint8_t *level = level_.data() + Lane(slot);
  uint32_t *par = parent_.data() + slot;
  ParallelFor(nv, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
    uint64_t reached = 0;
    uint32_t depth = 0;
    for (uint64_t v = b; v < e; v++) {
      level[v * 2 * S] = lv[v];
      level[v * 2 * S + kLanes] = Tag(static_cast<uint64_t>(parent[v]));
      par[v * S] = static_cast<uint32_t>(parent[v]);
      if (lv[v] == kUnreached) continue;
      reached++;
      depth = std::max<uint32_t>(depth, lv[v]);
    }
    std::lock_guard<std::mutex> lock(mu);
    r.reached += reached;
    r.depth = std::max(r.depth, depth);
  });
  return r;
}

Validation EdgeListValidator::Add(uint64_t root, const std::vector<int64_t> &parent) {
  if (!status_.ok()) return Invalid(BfsError::kSize, "validator unusable: " + status_.msg);
  if (full())
    return Invalid(BfsError::kSize, "the validator holds " + Decimal(capacity_) + " trees");
  if (parent.size() != nv_)
    return Invalid(BfsError::kSize,
                   Decimal(parent.size()) + " parents for " + Decimal(nv_) + " vertices");
  if (root >= nv_ || parent[root] != static_cast<int64_t>(root))
    return Invalid(BfsError::kRoot, "root " + Decimal(root) + " is not its own parent");
  const Validation r = Levels(held(), root, parent);
  if (r.ok()) {
    roots_.push_back(root);
    shape_.push_back(r);
  }
  return r;
}

std::vector<Validation> EdgeListValidator::Check() {
  const unsigned k = held();
  if (k == 0) return {};
  const uint64_t S = stride_, m = uint64_t{graph_.edgefactor} << graph_.scale;
  const uint64_t valid = k == 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1;
  const uint8_t *level = level_.data();
  const uint32_t *par = parent_.data();
  uint64_t *found = found_.data();
  ParallelFor(nv_, graph_.threads,
              [&](uint64_t b, uint64_t e, unsigned) { std::fill(found + b, found + e, 0); });
  const unsigned threads = Threads(graph_.threads);
  std::vector<WorkerState> ws(threads);
  const EdgeSource edge(graph_.scale, graph_.seed);
  // The tree edge (child, parent) is seen: child's bit t, for the bits of cand.
  auto see = [&](uint64_t child, uint64_t parent, uint64_t cand, unsigned base) {
    std::atomic_ref<uint64_t> f(found[child]);
    cand &= ~(f.load(std::memory_order_relaxed) >> base);
    for (; cand != 0; cand &= cand - 1) {
      const unsigned t = base + static_cast<unsigned>(std::countr_zero(cand));
      if (par[child * S + t] == parent) f.fetch_or(uint64_t{1} << t, std::memory_order_relaxed);
    }
  };
  ParallelEach((m + kBlockEdges - 1) / kBlockEdges, threads, [&](uint64_t blk, unsigned w) {
    WorkerState &st = ws[w];
    uint8_t acc[kMaxTrees] = {};
    const uint64_t first = blk * kBlockEdges, last = std::min(m, first + kBlockEdges);
    unsigned pending = 0;
    // Edges a group: generated and their records prefetched, then checked,
    // so that the records' cache misses overlap.
    constexpr unsigned kGroup = 32;
    uint64_t gu[kGroup], gv[kGroup];
    for (uint64_t i = first; i < last; i++) {
      const uint64_t g = (i - first) % kGroup;
      if (g == 0) {
        for (uint64_t j = 0; j < kGroup && i + j < last; j++) {
          std::tie(gu[j], gv[j]) = edge(i + j);
          for (uint64_t at = 0; at < 2 * S; at += 64) {
            __builtin_prefetch(level + gu[j] * 2 * S + at);
            __builtin_prefetch(level + gv[j] * 2 * S + at);
          }
        }
      }
      const uint64_t u = gu[g], v = gv[g];
      if (u == v) continue;  // a self-loop joins a level to itself and is no tree edge
      const uint8_t tag_u = Tag(u), tag_v = Tag(v);
      for (unsigned base = 0; base < S; base += kLanes) {
        const Masks mk = Compare(level + u * 2 * S + 2 * base, level + v * 2 * S + 2 * base, tag_u,
                                 tag_v, acc + base);
        uint64_t bad = (uint64_t{mk.bad} << base) & valid;
        for (; bad != 0; bad &= bad - 1) {
          EdgeFail &f = st.fail[std::countr_zero(bad)];
          if (i < f.edge) f = {i, u, v};
        }
        const uint64_t held = valid >> base;  // lanes past the batch hold stale trees
        if ((mk.up & held) != 0) see(u, v, mk.up & held, base);
        if ((mk.down & held) != 0) see(v, u, mk.down & held, base);
      }
      if (++pending == 255) {  // the byte counters are full
        for (unsigned t = 0; t < S; t++) st.nedge[t] += acc[t];
        std::fill(acc, acc + S, 0);
        pending = 0;
      }
    }
    for (unsigned t = 0; t < S; t++) st.nedge[t] += acc[t];
    return true;
  });
  std::vector<Validation> out = shape_;
  std::vector<uint64_t> missing(k, UINT64_MAX);  // the lowest vertex whose parent edge is absent
  std::mutex mu;
  ParallelFor(nv_, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
    std::vector<uint64_t> mine(k, UINT64_MAX);
    for (uint64_t v = b; v < e; v++)
      for (unsigned t = 0; t < k; t++) {
        const uint8_t l = level[v * 2 * S + Lane(t)];
        if (l != 0 && l != kUnreached && !((found[v] >> t) & 1) && mine[t] == UINT64_MAX)
          mine[t] = v;
      }
    std::lock_guard<std::mutex> lock(mu);
    for (unsigned t = 0; t < k; t++) missing[t] = std::min(missing[t], mine[t]);
  });
  for (unsigned t = 0; t < k; t++) {
    EdgeFail f;
    for (const WorkerState &s : ws) {
      if (s.fail[t].edge < f.edge) f = s.fail[t];
      out[t].nedge += s.nedge[t];
    }
    if (f.edge != UINT64_MAX) {
      const int lu = level[f.u * 2 * S + Lane(t)], lv = level[f.v * 2 * S + Lane(t)];
      const bool split = (lu == kUnreached) != (lv == kUnreached);
      out[t] = Invalid(
          split ? BfsError::kComponent : BfsError::kLevelGap,
          "edge " + Decimal(f.edge) + " (" + Decimal(f.u) + " - " + Decimal(f.v) + ") " +
              (split ? "leaves the tree" : "joins levels " + Decimal(lu) + " and " + Decimal(lv)));
    } else if (missing[t] != UINT64_MAX) {
      const uint64_t v = missing[t];
      out[t] =
          Invalid(BfsError::kNotAnEdge, "tree edge " + Decimal(v) + " -> " +
                                            Decimal(par[v * S + t]) + " is not in the edge list");
    }
  }
  roots_.clear();
  shape_.clear();
  return out;
}

Validation ValidateAgainstEdgeList(const KroneckerParams &graph, uint64_t root,
                                   const std::vector<int64_t> &parent) {
  EdgeListValidator val(graph, 1);
  if (!val.status().ok()) return Invalid(BfsError::kSize, val.status().msg);
  Validation r = val.Add(root, parent);
  if (!r.ok()) return r;
  return val.Check().at(0);
}

}  // namespace g500
