// SPDX-License-Identifier: Apache-2.0
#include "validate.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace g500 {
namespace {

// Level d + 1 for every vertex whose parent is at level d; how many.
uint64_t NextLevel(const std::vector<int64_t> &parent, std::vector<int32_t> &level, int32_t d,
                   unsigned threads) {
  std::atomic<uint64_t> found{0};
  ParallelFor(parent.size(), threads, [&](uint64_t b, uint64_t e, unsigned) {
    uint64_t n = 0;
    for (uint64_t v = b; v < e; v++) {
      std::atomic_ref<int32_t> lv(level[v]);
      if (parent[v] < 0 || lv.load(std::memory_order_relaxed) != -1) continue;
      std::atomic_ref<int32_t> lp(level[static_cast<uint64_t>(parent[v])]);
      if (lp.load(std::memory_order_relaxed) != d) continue;
      lv.store(d + 1, std::memory_order_relaxed);
      n++;
    }
    found.fetch_add(n, std::memory_order_relaxed);
  });
  return found.load();
}

}  // namespace

const char *BfsErrorName(BfsError e) {
  switch (e) {
    case BfsError::kNone:
      return "none";
    case BfsError::kSize:
      return "size";
    case BfsError::kRoot:
      return "root";
    case BfsError::kRange:
      return "range";
    case BfsError::kCycle:
      return "cycle";
    case BfsError::kNotAnEdge:
      return "not-an-edge";
    case BfsError::kLevelGap:
      return "level-gap";
    case BfsError::kComponent:
      return "component";
    case BfsError::kDepth:
      return "depth";
  }
  return "?";
}

Validation TreeLevels(const Csr &g, uint64_t root, const std::vector<int64_t> &parent,
                      std::vector<int32_t> *level, unsigned threads) {
  const uint64_t nv = g.nv();
  if (parent.size() != nv)
    return Invalid(BfsError::kSize,
                   Decimal(parent.size()) + " parents for " + Decimal(nv) + " vertices");
  if (root >= nv || parent[root] != static_cast<int64_t>(root))
    return Invalid(BfsError::kRoot, "root " + Decimal(root) + " is not its own parent");
  for (uint64_t v = 0; v < nv; v++)
    if (parent[v] < -1 || parent[v] >= static_cast<int64_t>(nv))
      return Invalid(BfsError::kRange,
                     "vertex " + Decimal(v) + " has parent " + std::to_string(parent[v]));
  level->assign(nv, -1);
  (*level)[root] = 0;
  // Level by level from the root: a round per level, each over every vertex.
  int32_t d = 0;
  while (NextLevel(parent, *level, d, threads) > 0) d++;
  Validation r;
  r.depth = static_cast<uint32_t>(d);
  for (uint64_t v = 0; v < nv; v++) {
    if (parent[v] >= 0 && (*level)[v] < 0)
      return Invalid(BfsError::kCycle,
                     "vertex " + Decimal(v) + ": its parents do not lead to the root");
    r.reached += (*level)[v] >= 0;
  }
  return r;
}

Validation ValidateBfs(const Csr &g, uint64_t root, const std::vector<int64_t> &parent,
                       unsigned threads) {
  std::vector<int32_t> level;
  Validation r = TreeLevels(g, root, parent, &level, threads);
  if (!r.ok()) return r;
  std::mutex mu;
  Validation first;  // the failure at the lowest vertex, whatever the threads
  uint64_t first_v = UINT64_MAX;
  std::atomic<uint64_t> entries{0};
  ParallelFor(g.nv(), threads, [&](uint64_t b, uint64_t e, unsigned) {
    uint64_t n = 0;
    for (uint64_t v = b; v < e; v++) {
      Validation f;
      const int32_t lv = level[v];
      if (lv >= 0) n += g.Degree(v);
      if (lv > 0 && !g.HasEdge(v, static_cast<uint32_t>(parent[v])))
        f = Invalid(BfsError::kNotAnEdge, "tree edge " + Decimal(v) + " -> " +
                                              std::to_string(parent[v]) + " is not in the graph");
      for (uint32_t u : g.Row(v)) {
        if (!f.ok()) break;
        if (u >= g.nv()) {
          f = Invalid(BfsError::kRange,
                      "edge " + Decimal(v) + " - " + Decimal(u) + ": vertex out of range");
        } else if ((lv < 0) != (level[u] < 0)) {
          f = Invalid(BfsError::kComponent,
                      "edge " + Decimal(v) + " - " + Decimal(u) + " leaves the tree");
        } else if (lv >= 0 && (lv - level[u] > 1 || level[u] - lv > 1)) {
          f = Invalid(BfsError::kLevelGap, "edge " + Decimal(v) + " - " + Decimal(u) +
                                               " joins levels " + std::to_string(lv) + " and " +
                                               std::to_string(level[u]));
        }
      }
      if (!f.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (v < first_v) first_v = v, first = std::move(f);
        return;
      }
    }
    entries.fetch_add(n, std::memory_order_relaxed);
  });
  if (!first.ok()) return first;
  r.nedge = entries.load() / 2;  // each input edge is stored twice
  return r;
}

}  // namespace g500
