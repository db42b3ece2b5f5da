// SPDX-License-Identifier: Apache-2.0
#include "bfs_host.h"

#include <algorithm>
#include <atomic>

namespace g500 {

bool Claim(std::vector<int64_t> &parent, uint32_t u, uint32_t p) {
  std::atomic_ref<int64_t> slot(parent[u]);
  if (slot.load(std::memory_order_relaxed) != -1) return false;
  int64_t expect = -1;
  return slot.compare_exchange_strong(expect, p, std::memory_order_relaxed);
}

void Frontier::Gather(std::vector<uint32_t> *out) {
  out->clear();
  for (auto &l : local_) {
    out->insert(out->end(), l.begin(), l.end());
    l.clear();
  }
  std::sort(out->begin(), out->end());
}

namespace {

// One top-down level: each frontier vertex claims its unreached neighbours.
// Returns the number of edges the next frontier has.
uint64_t TopDown(const Csr &g, const std::vector<uint32_t> &cur, unsigned threads,
                 std::vector<int64_t> &parent, Frontier &next) {
  std::atomic<uint64_t> next_edges{0};
  ParallelFor(cur.size(), threads, [&](uint64_t b, uint64_t e, unsigned t) {
    uint64_t edges = 0;
    auto &out = next.Local(t);
    for (uint64_t i = b; i < e; i++) {
      for (uint32_t u : g.Row(cur[i])) {
        if (u < g.nv() && Claim(parent, u, cur[i])) {
          out.push_back(u);
          edges += g.Degree(u);
        }
      }
    }
    next_edges.fetch_add(edges, std::memory_order_relaxed);
  });
  return next_edges.load();
}

// One bottom-up level: each unreached vertex looks for a neighbour in the
// frontier (in_cur) and takes the first it finds as its parent.
uint64_t BottomUp(const Csr &g, const std::vector<uint8_t> &in_cur, unsigned threads,
                  std::vector<int64_t> &parent, Frontier &next) {
  std::atomic<uint64_t> next_edges{0};
  ParallelFor(g.nv(), threads, [&](uint64_t b, uint64_t e, unsigned t) {
    uint64_t edges = 0;
    auto &out = next.Local(t);
    for (uint64_t v = b; v < e; v++) {
      if (parent[v] != -1) continue;
      for (uint32_t u : g.Row(v)) {
        if (u < g.nv() && in_cur[u]) {
          parent[v] = u;  // only this thread writes v in a bottom-up level
          out.push_back(static_cast<uint32_t>(v));
          edges += g.Degree(v);
          break;
        }
      }
    }
    next_edges.fetch_add(edges, std::memory_order_relaxed);
  });
  return next_edges.load();
}

}  // namespace

void HostBfs(const Csr &g, uint64_t root, const HostBfsOptions &o, std::vector<int64_t> *parent) {
  const unsigned threads = Threads(o.threads);
  parent->assign(g.nv(), -1);
  if (root >= g.nv()) return;
  (*parent)[root] = static_cast<int64_t>(root);
  std::vector<uint32_t> cur{static_cast<uint32_t>(root)};
  std::vector<uint8_t> in_cur;
  Frontier next(threads);
  uint64_t cur_edges = g.Degree(root), unexplored = g.ne();
  bool bottom_up = false;
  // Beamer's heuristic: go bottom-up once the frontier's edges exceed 1/14
  // of those not yet explored, back once it holds under nv/24 vertices.
  while (!cur.empty()) {
    if (o.direction_optimizing) {
      if (!bottom_up && cur_edges * 14 > unexplored)
        bottom_up = true;
      else if (bottom_up && cur.size() * 24 < g.nv())
        bottom_up = false;
    }
    unexplored -= std::min(unexplored, cur_edges);
    if (bottom_up) {
      in_cur.assign(g.nv(), 0);
      for (uint32_t v : cur) in_cur[v] = 1;
      cur_edges = BottomUp(g, in_cur, threads, *parent, next);
    } else {
      cur_edges = TopDown(g, cur, threads, *parent, next);
    }
    next.Gather(&cur);
  }
}

}  // namespace g500
