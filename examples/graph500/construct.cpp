// SPDX-License-Identifier: Apache-2.0
#include "construct.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

namespace g500 {
namespace {

struct Entry {
  uint32_t v, other;  // other goes in v's row
};

struct Shared {
  std::span<const PackedEdge> edges;
  std::span<uint64_t> off;
  std::span<uint32_t> cols;
  uint64_t nv;
  unsigned workers;
  uint64_t range;  // vertices a worker owns: [t * range, (t + 1) * range)
  uint64_t chunk;  // edges a chunk
  std::barrier<> *sync;
  std::vector<uint64_t> total;   // a worker's share of the column indices
  std::vector<Entry> stage;      // a chunk's ends, grouped by owner, then by worker
  std::vector<uint64_t> count;   // [t * workers + o]: ends worker t stages for owner o
  std::atomic<bool> bad{false};  // an endpoint out of range
};

// Calls apply(v, other) for both ends of every edge whose v this worker
// owns, in edge order. Chunk by chunk: each worker sorts a slice of the
// chunk's ends by owner into the staging area, then applies its own.
template <class Fn>
void ForEachOwnedEnd(Shared &s, unsigned t, std::vector<uint64_t> &pos, Fn &&apply) {
  const unsigned T = s.workers;
  const uint64_t m = s.edges.size(), nv = s.nv, R = s.range;
  uint64_t *cnt = &s.count[uint64_t{t} * T];
  for (uint64_t c = 0; c < m; c += s.chunk) {
    const uint64_t len = std::min(s.chunk, m - c);
    const uint64_t lo = c + len * t / T, hi = c + len * (t + 1) / T;
    std::fill(cnt, cnt + T, 0);
    for (uint64_t i = lo; i < hi; i++) {
      const uint64_t u = s.edges[i].v0(), v = s.edges[i].v1();
      if (u >= nv || v >= nv) {
        s.bad.store(true, std::memory_order_relaxed);
        continue;
      }
      cnt[u / R]++;
      cnt[v / R]++;
    }
    s.sync->arrive_and_wait();
    uint64_t at = 0, mine = 0, mine_end = 0;
    for (unsigned o = 0; o < T; o++)
      for (unsigned w = 0; w < T; w++) {
        if (w == t) pos[o] = at;
        if (o == t && w == 0) mine = at;
        at += s.count[uint64_t{w} * T + o];
        if (o == t && w == T - 1) mine_end = at;
      }
    for (uint64_t i = lo; i < hi; i++) {
      const uint64_t u = s.edges[i].v0(), v = s.edges[i].v1();
      if (u >= nv || v >= nv) continue;
      s.stage[pos[u / R]++] = {static_cast<uint32_t>(u), static_cast<uint32_t>(v)};
      s.stage[pos[v / R]++] = {static_cast<uint32_t>(v), static_cast<uint32_t>(u)};
    }
    s.sync->arrive_and_wait();
    for (uint64_t k = mine; k < mine_end; k++) apply(s.stage[k].v, s.stage[k].other);
    s.sync->arrive_and_wait();  // the area and the counts are rewritten next chunk
  }
}

void Worker(Shared &s, unsigned t) {
  const uint64_t a = std::min(s.nv, t * s.range), b = std::min(s.nv, a + s.range), n = b - a;
  auto &off = s.off;
  std::vector<uint64_t> pos(s.workers);
  // Degrees: off[v + 1] counts v's entries.
  ForEachOwnedEnd(s, t, pos, [&](uint32_t v, uint32_t) { off[v + 1]++; });
  uint64_t sum = 0;
  for (uint64_t v = a; v < b; v++) off[v + 1] = sum += off[v + 1];
  s.total[t] = sum;
  s.sync->arrive_and_wait();
  uint64_t base = 0;
  for (unsigned k = 0; k < t; k++) base += s.total[k];
  for (uint64_t v = a; v < b; v++) off[v + 1] += base;
  s.sync->arrive_and_wait();
  if (s.bad.load()) return;  // every worker sees it after the barrier
  // Placement: off[v] serves as row v's cursor, ending at off[v + 1]'s value.
  ForEachOwnedEnd(s, t, pos, [&](uint32_t v, uint32_t other) { s.cols[off[v]++] = other; });
  s.sync->arrive_and_wait();
  const uint64_t first = a == 0 ? 0 : off[a - 1];  // row a's start, before anyone shifts
  s.sync->arrive_and_wait();
  for (uint64_t v = b; v-- > a + 1;) off[v] = off[v - 1];
  if (n > 0) off[a] = first;
  s.sync->arrive_and_wait();
  for (uint64_t v = a; v < b; v++)
    std::sort(s.cols.begin() + static_cast<ptrdiff_t>(off[v]),
              s.cols.begin() + static_cast<ptrdiff_t>(off[v + 1]));
}

}  // namespace

Status BuildCsr(std::span<const PackedEdge> edges, uint64_t nv, unsigned threads,
                std::span<uint64_t> offsets, std::span<uint32_t> cols, uint64_t chunk_edges) {
  if (nv == 0 || nv > (uint64_t{1} << 32) || offsets.size() != nv + 1 ||
      cols.size() != 2 * edges.size() || chunk_edges == 0)
    return Status::Error(-EINVAL, "kernel 1: " + std::to_string(nv) + " vertices, " +
                                      std::to_string(offsets.size()) + " offsets, " +
                                      std::to_string(cols.size()) + " column indices for " +
                                      std::to_string(edges.size()) + " edges");
  const auto workers = static_cast<unsigned>(std::min<uint64_t>(Threads(threads), nv));
  std::barrier<> sync(workers);
  Shared s{.edges = edges,
           .off = offsets,
           .cols = cols,
           .nv = nv,
           .workers = workers,
           .range = (nv + workers - 1) / workers,
           .chunk = chunk_edges,
           .sync = &sync,
           .total = std::vector<uint64_t>(workers),
           .stage = std::vector<Entry>(2 * std::min(chunk_edges, edges.size())),
           .count = std::vector<uint64_t>(uint64_t{workers} * workers)};
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < workers; t++) pool.emplace_back([&s, t] { Worker(s, t); });
  Worker(s, 0);
  for (auto &th : pool) th.join();
  if (s.bad.load())
    return Status::Error(-EINVAL,
                         "kernel 1: an edge's endpoint is not below " + std::to_string(nv));
  return Status::Ok();
}

}  // namespace g500
