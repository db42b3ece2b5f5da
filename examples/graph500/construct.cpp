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

// Edges a block: 12 MiB, shared through the last-level cache by the workers.
constexpr uint64_t kBlockEdges = 1ull << 20;

struct Shared {
  std::span<const PackedEdge> edges;
  std::span<uint64_t> off;
  std::span<uint32_t> cols;
  uint64_t nv;
  unsigned workers;
  std::barrier<> *sync;
  std::vector<uint64_t> total;    // a worker's share of the column indices
  std::atomic<bool> bad{false};   // an endpoint out of range
};

// Calls fn(u, v) for every edge, block by block in step with the others.
template <class Fn>
void ForEachEdge(Shared &s, Fn &&fn) {
  for (uint64_t b = 0; b < s.edges.size(); b += kBlockEdges) {
    const uint64_t e = std::min<uint64_t>(b + kBlockEdges, s.edges.size());
    for (uint64_t i = b; i < e; i++) fn(s.edges[i].v0(), s.edges[i].v1());
    s.sync->arrive_and_wait();
  }
}

void Worker(Shared &s, unsigned t) {
  const uint64_t a = s.nv * t / s.workers, b = s.nv * (t + 1) / s.workers, n = b - a;
  auto &off = s.off;
  // Degrees: off[v + 1] counts v's entries.
  ForEachEdge(s, [&](uint64_t u, uint64_t v) {
    if (u >= s.nv || v >= s.nv) s.bad.store(true, std::memory_order_relaxed);
    if (u - a < n) off[u + 1]++;
    if (v - a < n) off[v + 1]++;
  });
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
  ForEachEdge(s, [&](uint64_t u, uint64_t v) {
    if (u - a < n) s.cols[off[u]++] = static_cast<uint32_t>(v);
    if (v - a < n) s.cols[off[v]++] = static_cast<uint32_t>(u);
  });
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
                std::span<uint64_t> offsets, std::span<uint32_t> cols) {
  if (nv == 0 || nv > (uint64_t{1} << 32) || offsets.size() != nv + 1 ||
      cols.size() != 2 * edges.size())
    return Status::Error(-EINVAL, "kernel 1: " + std::to_string(nv) + " vertices, " +
                                      std::to_string(offsets.size()) + " offsets, " +
                                      std::to_string(cols.size()) + " column indices for " +
                                      std::to_string(edges.size()) + " edges");
  const auto workers = static_cast<unsigned>(std::min<uint64_t>(Threads(threads), nv));
  std::barrier<> sync(workers);
  Shared s{.edges = edges, .off = offsets, .cols = cols, .nv = nv, .workers = workers,
           .sync = &sync, .total = std::vector<uint64_t>(workers)};
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < workers; t++) pool.emplace_back([&s, t] { Worker(s, t); });
  Worker(s, 0);
  for (auto &th : pool) th.join();
  if (s.bad.load())
    return Status::Error(-EINVAL, "kernel 1: an edge's endpoint is not below " +
                                      std::to_string(nv));
  return Status::Ok();
}

}  // namespace g500
