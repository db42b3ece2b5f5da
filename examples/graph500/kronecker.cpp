// SPDX-License-Identifier: Apache-2.0
#include "kronecker.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <new>

namespace g500 {
namespace {

constexpr double kA = 0.57, kB = 0.19, kC = 0.19;
constexpr double kAB = kA + kB;
constexpr double kANorm = kA / (kA + kB);          // P(end bit 0 | start bit 0)
constexpr double kCNorm = kC / (1.0 - (kA + kB));  // P(end bit 0 | start bit 1)

// One 64-bit draw per level: two 32-bit uniforms, compared with the
// probabilities scaled to 2^32 (x / 2^32 > p exactly when x > floor(p 2^32)).
constexpr uint64_t Scaled(double p) {
  return static_cast<uint64_t>(p * 4294967296.0);
}
constexpr uint64_t kAB32 = Scaled(kAB), kANorm32 = Scaled(kANorm), kCNorm32 = Scaled(kCNorm);

}  // namespace

std::pair<uint64_t, uint64_t> KroneckerEdge(uint32_t scale, uint64_t seed, uint64_t i) {
  const uint64_t key = Mix64(seed) ^ (i * 0xd1b54a32d192ed03ull);
  uint64_t u = 0, v = 0;
  for (uint32_t b = 0; b < scale; b++) {
    const uint64_t r = Mix64(key + b * 0x9e3779b97f4a7c15ull);
    const uint64_t ib = (r >> 32) > kAB32 ? 1 : 0;
    const uint64_t jb = (r & 0xffffffffu) > (ib ? kCNorm32 : kANorm32) ? 1 : 0;
    u |= ib << b;
    v |= jb << b;
  }
  return {u, v};
}

std::vector<uint32_t> VertexPermutation(uint32_t scale, uint64_t seed) {
  const uint64_t n = uint64_t{1} << scale;
  std::vector<uint32_t> perm(n);
  for (uint64_t i = 0; i < n; i++) perm[i] = static_cast<uint32_t>(i);
  Rng rng(seed ^ 0x5bd1e995ull);
  for (uint64_t i = n - 1; i > 0; i--) std::swap(perm[i], perm[rng.Below(i + 1)]);
  return perm;
}

namespace {

using Counter = std::atomic<uint64_t>;

// Fills cols in two passes: generate the (permuted) edge list and count the
// degrees, then place each edge in both rows.
void FillRows(const KroneckerParams &p, const std::vector<uint32_t> &perm, uint64_t m,
              Counter *cursor, std::vector<uint64_t> &offsets, std::vector<uint32_t> &cols) {
  const uint64_t nv = perm.size();
  std::vector<uint32_t> edges(2 * m);
  ParallelFor(m, p.threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t i = b; i < e; i++) {
      const auto [u, v] = KroneckerEdge(p.scale, p.seed, i);
      edges[2 * i] = perm[u];
      edges[2 * i + 1] = perm[v];
      cursor[perm[u]].fetch_add(1, std::memory_order_relaxed);
      cursor[perm[v]].fetch_add(1, std::memory_order_relaxed);
    }
  });
  offsets[0] = 0;
  for (uint64_t v = 0; v < nv; v++) {
    offsets[v + 1] = offsets[v] + cursor[v].load(std::memory_order_relaxed);
    cursor[v].store(offsets[v], std::memory_order_relaxed);
  }
  cols.resize(offsets[nv]);
  ParallelFor(m, p.threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t i = b; i < e; i++) {
      const uint32_t u = edges[2 * i], v = edges[2 * i + 1];
      cols[cursor[u].fetch_add(1, std::memory_order_relaxed)] = v;
      cols[cursor[v].fetch_add(1, std::memory_order_relaxed)] = u;
    }
  });
  edges = {};
  ParallelFor(nv, p.threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t v = b; v < e; v++)
      std::sort(cols.begin() + static_cast<ptrdiff_t>(offsets[v]),
                cols.begin() + static_cast<ptrdiff_t>(offsets[v + 1]));
  });
}

}  // namespace

Status GenerateKronecker(const KroneckerParams &p, Csr *out) {
  if (p.scale < 1 || p.scale > 32 || p.edgefactor == 0)
    return Status::Error(-EINVAL, "scale must be 1..32 and edgefactor at least 1 (scale " +
                                      std::to_string(p.scale) + ", edgefactor " +
                                      std::to_string(p.edgefactor) + ")");
  const uint64_t nv = uint64_t{1} << p.scale;
  const uint64_t m = nv * p.edgefactor;
  try {
    const std::vector<uint32_t> perm = VertexPermutation(p.scale, p.seed);
    std::vector<uint64_t> offsets(nv + 1);
    std::vector<uint32_t> cols;
    {
      std::unique_ptr<Counter[]> cursor(new Counter[nv]);
      for (uint64_t v = 0; v < nv; v++) cursor[v].store(0, std::memory_order_relaxed);
      FillRows(p, perm, m, cursor.get(), offsets, cols);
    }
    *out = Csr::FromArrays(p.scale, p.edgefactor, p.seed, std::move(offsets), std::move(cols));
  } catch (const std::bad_alloc &) {
    return Status::Error(-ENOMEM,
                         "not enough memory for a graph of scale " + std::to_string(p.scale));
  }
  return Status::Ok();
}

}  // namespace g500
