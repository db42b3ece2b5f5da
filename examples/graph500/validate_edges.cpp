// SPDX-License-Identifier: Apache-2.0
#include "validate_edges.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <mutex>
#include <string>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace g500 {
namespace {

constexpr uint8_t kUnreached = 0xff, kPending = 0xfe;
constexpr uint64_t kBlockEdges = 1ull << 16;
constexpr unsigned kLanes = 16;

std::string V(uint64_t v) {
  return std::to_string(v);
}

Validation Fail(BfsError e, std::string msg) {
  Validation r;
  r.error = e;
  r.msg = std::move(msg);
  return r;
}

// 16 trees' levels at the two ends of an edge, as bit masks (bit i: tree i).
struct Masks {
  uint32_t bad;   // one end reached, not the other; or levels two or more apart
  uint32_t up;    // both reached, a = b + 1: the edge may be a's parent edge
  uint32_t down;  // both reached, b = a + 1
};

// Adds one, in acc, for each tree with both ends reached.
Masks Compare(const uint8_t *a, const uint8_t *b, uint8_t *acc) {
#ifdef __SSE2__
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
  const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b));
  const __m128i ff = _mm_set1_epi8(static_cast<char>(kUnreached)), one = _mm_set1_epi8(1);
  const __m128i ux = _mm_cmpeq_epi8(x, ff), uy = _mm_cmpeq_epi8(y, ff);
  const __m128i both = _mm_andnot_si128(_mm_or_si128(ux, uy), _mm_set1_epi8(-1));
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(acc));
  _mm_storeu_si128(reinterpret_cast<__m128i *>(acc), _mm_sub_epi8(c, both));
  const auto mask = [](__m128i m) { return static_cast<uint32_t>(_mm_movemask_epi8(m)); };
  const uint32_t bm = mask(both);
  const uint32_t up = mask(_mm_cmpeq_epi8(x, _mm_add_epi8(y, one))) & bm;
  const uint32_t down = mask(_mm_cmpeq_epi8(y, _mm_add_epi8(x, one))) & bm;
  const uint32_t same = mask(_mm_cmpeq_epi8(x, y)) & bm;
  return {mask(_mm_xor_si128(ux, uy)) | (bm & ~(up | down | same)), up, down};
#else
  Masks m{0, 0, 0};
  for (unsigned i = 0; i < kLanes; i++) {
    const bool rx = a[i] != kUnreached, ry = b[i] != kUnreached;
    if (rx != ry) m.bad |= 1u << i;
    if (!rx || !ry) continue;
    acc[i]++;
    const int d = int{a[i]} - int{b[i]};
    if (d > 1 || d < -1) m.bad |= 1u << i;
    if (d == 1) m.up |= 1u << i;
    if (d == -1) m.down |= 1u << i;
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

}  // namespace

uint64_t EdgeListValidator::BytesFor(uint32_t scale, unsigned capacity) {
  const uint64_t stride = (capacity + kLanes - 1) / kLanes * kLanes;
  return (uint64_t{1} << scale) * (5 * stride + 8);
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
    status_ = Status::Error(-EINVAL, "validator capacity must be 1.." + V(kMaxTrees) +
                                         " trees, not " + V(capacity));
  if (!status_.ok()) return;
  nv_ = uint64_t{1} << graph.scale;
  capacity_ = capacity;
  stride_ = (capacity + kLanes - 1) / kLanes * kLanes;
  status_ = BigArray<uint8_t>::Allocate(nv_ * stride_, &level_);
  if (status_.ok()) status_ = BigArray<uint32_t>::Allocate(nv_ * stride_, &parent_);
  if (status_.ok()) status_ = BigArray<uint64_t>::Allocate(nv_, &found_);
}

Validation EdgeListValidator::Levels(unsigned slot, uint64_t root,
                                     const std::vector<int64_t> &parent) {
  const uint64_t nv = nv_, S = stride_;
  uint8_t *level = level_.data() + slot;
  uint32_t *par = parent_.data() + slot;
  std::atomic<uint64_t> bad{UINT64_MAX};  // the lowest vertex with a parent out of range
  ParallelFor(nv, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t v = b; v < e; v++) {
      const int64_t p = parent[v];
      if (p < -1 || p >= static_cast<int64_t>(nv)) {
        uint64_t cur = bad.load();
        while (v < cur && !bad.compare_exchange_weak(cur, v)) {
        }
        return;
      }
      level[v * S] = p < 0 ? kUnreached : kPending;
      par[v * S] = static_cast<uint32_t>(p);
    }
  });
  if (bad.load() != UINT64_MAX) {
    const uint64_t v = bad.load();
    return Fail(BfsError::kRange, "vertex " + V(v) + " has parent " + std::to_string(parent[v]));
  }
  level[root * S] = 0;
  // A round a level: pending vertices whose parent is at level d go to d + 1.
  uint32_t d = 0;
  uint64_t moved = 1;
  for (; d < kMaxDepth && moved > 0; d++) {
    std::atomic<uint64_t> n{0};
    ParallelFor(nv, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
      uint64_t k = 0;
      for (uint64_t v = b; v < e; v++) {
        if (level[v * S] != kPending) continue;
        std::atomic_ref<uint8_t> lp(level[uint64_t{par[v * S]} * S]);
        if (lp.load(std::memory_order_relaxed) != d) continue;
        std::atomic_ref<uint8_t>(level[v * S]).store(static_cast<uint8_t>(d + 1),
                                                      std::memory_order_relaxed);
        k++;
      }
      n.fetch_add(k, std::memory_order_relaxed);
    });
    moved = n.load();
  }
  Validation r;
  r.depth = moved > 0 ? d : d - 1;
  for (uint64_t v = 0; v < nv; v++) {
    if (level[v * S] == kPending)
      return moved > 0 ? Fail(BfsError::kDepth, "vertex " + V(v) + " is deeper than " +
                                                    V(kMaxDepth) + " levels, the validator's limit")
                       : Fail(BfsError::kCycle,
                              "vertex " + V(v) + ": its parents do not lead to the root");
    r.reached += level[v * S] != kUnreached;
  }
  return r;
}

Validation EdgeListValidator::Add(uint64_t root, const std::vector<int64_t> &parent) {
  if (!status_.ok()) return Fail(BfsError::kSize, "validator unusable: " + status_.msg);
  if (full()) return Fail(BfsError::kSize, "the validator holds " + V(capacity_) + " trees");
  if (parent.size() != nv_)
    return Fail(BfsError::kSize, V(parent.size()) + " parents for " + V(nv_) + " vertices");
  if (root >= nv_ || parent[root] != static_cast<int64_t>(root))
    return Fail(BfsError::kRoot, "root " + V(root) + " is not its own parent");
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
  ParallelFor(nv_, graph_.threads, [&](uint64_t b, uint64_t e, unsigned) {
    std::fill(found + b, found + e, 0);
  });
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
    for (uint64_t i = first; i < last; i++) {
      const auto [u, v] = edge(i);
      if (u == v) continue;  // a self-loop joins a level to itself and is no tree edge
      for (unsigned base = 0; base < S; base += kLanes) {
        const Masks mk = Compare(level + u * S + base, level + v * S + base, acc + base);
        uint64_t bad = (uint64_t{mk.bad} << base) & valid;
        for (; bad != 0; bad &= bad - 1) {
          EdgeFail &f = st.fail[std::countr_zero(bad)];
          if (i < f.edge) f = {i, u, v};
        }
        if (mk.up != 0) see(u, v, mk.up, base);
        if (mk.down != 0) see(v, u, mk.down, base);
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
        const uint8_t l = level[v * S + t];
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
      const int lu = level[f.u * S + t], lv = level[f.v * S + t];
      const bool split = (lu == kUnreached) != (lv == kUnreached);
      out[t] = Fail(split ? BfsError::kComponent : BfsError::kLevelGap,
                    "edge " + V(f.edge) + " (" + V(f.u) + " - " + V(f.v) + ") " +
                        (split ? "leaves the tree" : "joins levels " + V(lu) + " and " + V(lv)));
    } else if (missing[t] != UINT64_MAX) {
      const uint64_t v = missing[t];
      out[t] = Fail(BfsError::kNotAnEdge, "tree edge " + V(v) + " -> " + V(par[v * S + t]) +
                                              " is not in the edge list");
    }
  }
  roots_.clear();
  shape_.clear();
  return out;
}

Validation ValidateAgainstEdgeList(const KroneckerParams &graph, uint64_t root,
                                   const std::vector<int64_t> &parent) {
  EdgeListValidator val(graph, 1);
  if (!val.status().ok()) return Fail(BfsError::kSize, val.status().msg);
  Validation r = val.Add(root, parent);
  if (!r.ok()) return r;
  return val.Check().at(0);
}

}  // namespace g500
