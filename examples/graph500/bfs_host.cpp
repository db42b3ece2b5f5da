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

void Frontier::Gather(std::vector<uint32_t> *out, bool sorted) {
  out->clear();
  for (auto &l : local_) {
    out->insert(out->end(), l.begin(), l.end());
    l.clear();
  }
  if (sorted) std::sort(out->begin(), out->end());
}

namespace {

// Work is handed out in chunks (a Kronecker graph's degrees are skewed, so
// equal slices would leave most threads waiting for the one with a hub).
constexpr uint64_t kTopDownChunk = 512;       // frontier vertices
constexpr uint64_t kBottomUpChunk = 1 << 14;  // vertices scanned

// One top-down level: each frontier vertex claims its unreached neighbours.
// Returns the number of edges the next frontier has.
uint64_t TopDown(const Csr &g, const std::vector<uint32_t> &cur, unsigned threads,
                 std::vector<int64_t> &parent, Frontier &next, uint64_t *examined) {
  std::atomic<uint64_t> next_edges{0}, scanned{0};
  const uint64_t chunks = (cur.size() + kTopDownChunk - 1) / kTopDownChunk;
  ParallelEach(chunks, threads, [&](uint64_t k, unsigned t) {
    uint64_t edges = 0, rows = 0;
    auto &out = next.Local(t);
    const uint64_t e = std::min<uint64_t>(cur.size(), (k + 1) * kTopDownChunk);
    for (uint64_t i = k * kTopDownChunk; i < e; i++) {
      rows += g.Degree(cur[i]);
      for (uint32_t u : g.Row(cur[i])) {
        if (u < g.nv() && Claim(parent, u, cur[i])) {
          out.push_back(u);
          edges += g.Degree(u);
        }
      }
    }
    next_edges.fetch_add(edges, std::memory_order_relaxed);
    scanned.fetch_add(rows, std::memory_order_relaxed);
    return true;
  });
  *examined += scanned.load();
  return next_edges.load();
}

struct LevelSize {
  uint64_t vertices = 0, edges = 0, examined = 0;
};

// One bottom-up level: each unreached vertex looks for a neighbour in the
// frontier (in_cur, a byte a vertex) and takes the first it finds as its
// parent; the new frontier is marked in in_next.
LevelSize BottomUp(const Csr &g, const std::vector<uint8_t> &in_cur, unsigned threads,
                   std::vector<int64_t> &parent, std::vector<uint8_t> &in_next) {
  std::atomic<uint64_t> vertices{0}, edges{0}, scanned{0};
  const uint64_t chunks = (g.nv() + kBottomUpChunk - 1) / kBottomUpChunk;
  ParallelEach(chunks, threads, [&](uint64_t k, unsigned) {
    uint64_t n = 0, m = 0, x = 0;
    const uint64_t e = std::min<uint64_t>(g.nv(), (k + 1) * kBottomUpChunk);
    for (uint64_t v = k * kBottomUpChunk; v < e; v++) {
      in_next[v] = 0;
      if (parent[v] != -1) continue;
      for (uint32_t u : g.Row(v)) {
        x++;
        if (u < g.nv() && in_cur[u]) {
          parent[v] = u;  // only this thread writes v in a bottom-up level
          in_next[v] = 1;
          n++;
          m += g.Degree(v);
          break;
        }
      }
    }
    vertices.fetch_add(n, std::memory_order_relaxed);
    edges.fetch_add(m, std::memory_order_relaxed);
    scanned.fetch_add(x, std::memory_order_relaxed);
    return true;
  });
  return {vertices.load(), edges.load(), scanned.load()};
}

// The frontier between the two forms: a list of vertices, a byte a vertex.
void ListToBytes(const std::vector<uint32_t> &cur, unsigned threads, std::vector<uint8_t> &bytes) {
  ParallelFor(bytes.size(), threads, [&](uint64_t b, uint64_t e, unsigned) {
    std::fill(bytes.begin() + static_cast<int64_t>(b), bytes.begin() + static_cast<int64_t>(e), 0);
  });
  ParallelFor(cur.size(), threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t i = b; i < e; i++) bytes[cur[i]] = 1;
  });
}

void BytesToList(const std::vector<uint8_t> &bytes, unsigned threads, Frontier &tmp,
                 std::vector<uint32_t> *cur) {
  const uint64_t chunks = (bytes.size() + kBottomUpChunk - 1) / kBottomUpChunk;
  ParallelEach(chunks, threads, [&](uint64_t k, unsigned t) {
    const uint64_t e = std::min<uint64_t>(bytes.size(), (k + 1) * kBottomUpChunk);
    for (uint64_t v = k * kBottomUpChunk; v < e; v++)
      if (bytes[v]) tmp.Local(t).push_back(static_cast<uint32_t>(v));
    return true;
  });
  tmp.Gather(cur, false);
}

}  // namespace

HostBfsLevels HostBfs(const Csr &g, uint64_t root, const HostBfsOptions &o,
                      std::vector<int64_t> *parent) {
  const unsigned threads = Threads(o.threads);
  HostBfsLevels levels;
  parent->assign(g.nv(), -1);
  if (root >= g.nv()) return levels;
  (*parent)[root] = static_cast<int64_t>(root);
  std::vector<uint32_t> cur{static_cast<uint32_t>(root)};
  std::vector<uint8_t> in_cur, in_next;  // the frontier while bottom-up
  Frontier next(threads);
  uint64_t cur_size = 1, cur_edges = g.Degree(root), unexplored = g.ne();
  bool bottom_up = false;
  // Beamer's heuristic: go bottom-up once the frontier's edges exceed 1/14
  // of those not yet explored, back once it holds under nv/24 vertices.
  while (cur_size > 0) {
    const bool was_bottom_up = bottom_up;
    if (o.direction_optimizing) {
      if (!bottom_up && cur_edges * 14 > unexplored)
        bottom_up = true;
      else if (bottom_up && cur_size * 24 < g.nv())
        bottom_up = false;
    }
    unexplored -= std::min(unexplored, cur_edges);
    if (bottom_up) {
      if (!was_bottom_up) {
        in_cur.resize(g.nv());
        in_next.resize(g.nv());
        ListToBytes(cur, threads, in_cur);
      }
      const LevelSize s = BottomUp(g, in_cur, threads, *parent, in_next);
      in_cur.swap(in_next);
      cur_size = s.vertices, cur_edges = s.edges;
      levels.bottom_up++;
      levels.edges_examined += s.examined;
      continue;
    }
    if (was_bottom_up) BytesToList(in_cur, threads, next, &cur);
    cur_edges = TopDown(g, cur, threads, *parent, next, &levels.edges_examined);
    next.Gather(&cur, false);
    cur_size = cur.size();
    levels.top_down++;
  }
  return levels;
}

}  // namespace g500
