// SPDX-License-Identifier: Apache-2.0
#include "kronecker.h"

#include <cerrno>
#include <new>
#include <string>

#include "cli.h"
#include "construct.h"

namespace g500 {
namespace {

constexpr double kA = 0.57, kB = 0.19, kC = 0.19;

// A level's quadrant from one 32-bit uniform x: (0,0) below A, (0,1) below
// A + B, (1,0) below A + B + C, else (1,1); the bounds scaled to 2^32 and
// rounded (within 2^-33 of the initiator's). One 64-bit draw serves two levels.
constexpr uint64_t Scaled(double p) {
  return static_cast<uint64_t>(p * 4294967296.0 + 0.5);
}
constexpr uint64_t kA32 = Scaled(kA), kAB32 = Scaled(kA + kB), kABC32 = Scaled(kA + kB + kC);

// The start bit and the end bit of the level drawn as x.
inline void Quadrant(uint64_t x, uint64_t *ib, uint64_t *jb) {
  const uint64_t a = x >= kA32, ab = x >= kAB32, abc = x >= kABC32;
  *ib = ab;
  *jb = a ^ ab ^ abc;
}

}  // namespace

std::pair<uint64_t, uint64_t> KroneckerEdge(uint32_t scale, uint64_t seed, uint64_t i) {
  const uint64_t key = Mix64(seed) ^ (i * 0xd1b54a32d192ed03ull);
  uint64_t u = 0, v = 0;
  for (uint32_t b = 0; b < scale; b += 2) {
    const uint64_t r = Mix64(key + b * 0x9e3779b97f4a7c15ull);
    uint64_t ib, jb;
    Quadrant(r & 0xffffffffu, &ib, &jb);
    u |= ib << b;
    v |= jb << b;
    Quadrant(r >> 32, &ib, &jb);  // the level past the top is masked off below
    u |= ib << (b + 1);
    v |= jb << (b + 1);
  }
  const uint64_t mask = (uint64_t{1} << scale) - 1;
  return {u & mask, v & mask};
}

Scrambler::Scrambler(uint32_t scale, uint64_t seed)
    : mask_(scale >= 64 ? ~uint64_t{0} : (uint64_t{1} << scale) - 1), shift_((scale + 1) / 2) {
  const uint64_t k = Mix64(seed ^ 0x5bd1e995ull);
  for (unsigned r = 0; r < kRounds; r++) {
    mul_[r] = Mix64(k + 2 * r) | 1;  // odd: a bijection modulo 2^scale
    add_[r] = Mix64(k + 2 * r + 1);
  }
}

Status CheckKroneckerParams(const KroneckerParams &p, uint32_t max_scale) {
  if (p.scale < 1 || p.scale > max_scale || p.edgefactor == 0)
    return Status::Error(-EINVAL, "scale must be 1.." + std::to_string(max_scale) +
                                      " and edgefactor at least 1 (scale " +
                                      std::to_string(p.scale) + ", edgefactor " +
                                      std::to_string(p.edgefactor) + ")");
  return Status::Ok();
}

Status GenerateEdges(const KroneckerParams &p, std::span<PackedEdge> out) {
  Status s = CheckKroneckerParams(p, kMaxEdgeListScale);
  if (!s.ok()) return s;
  const uint64_t m = uint64_t{p.edgefactor} << p.scale;
  if (out.size() != m)
    return Status::Error(-EINVAL, "the edge list holds " + std::to_string(m) + " edges, not " +
                                      std::to_string(out.size()));
  const EdgeSource edge(p.scale, p.seed);
  ParallelFor(m, p.threads, [&](uint64_t b, uint64_t e, unsigned) {
    for (uint64_t i = b; i < e; i++) {
      const auto [u, v] = edge(i);
      out[i] = PackedEdge::Make(u, v);
    }
  });
  return Status::Ok();
}

Status GenerateKronecker(const KroneckerParams &p, Csr *out, BuildTimes *times) {
  Status s = CheckKroneckerParams(p, kMaxCsrScale);
  if (!s.ok()) return s;
  const uint64_t nv = uint64_t{1} << p.scale;
  const uint64_t m = nv * p.edgefactor;
  BigArray<uint64_t> offsets;
  BigArray<uint32_t> cols;
  BuildTimes t;
  {
    BigArray<PackedEdge> edges;
    s = BigArray<PackedEdge>::Allocate(m, &edges);
    if (s.ok()) s = BigArray<uint64_t>::Allocate(nv + 1, &offsets);
    if (s.ok()) s = BigArray<uint32_t>::Allocate(2 * m, &cols);
    if (!s.ok()) return s;
    const double t0 = Now();
    s = GenerateEdges(p, edges.span());
    if (!s.ok()) return s;
    const double t1 = Now();
    s = BuildCsr(edges.span(), nv, p.threads, offsets.span(), cols.span());
    if (!s.ok()) return s;
    t.generation_s = t1 - t0;
    t.construction_s = Now() - t1;
  }
  *out = Csr::FromBig(p.scale, p.edgefactor, p.seed, std::move(offsets), std::move(cols));
  out->SetTimes(t.generation_s, t.construction_s);
  if (times != nullptr) *times = t;
  return Status::Ok();
}

}  // namespace g500
