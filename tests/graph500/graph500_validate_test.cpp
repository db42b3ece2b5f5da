// SPDX-License-Identifier: Apache-2.0
// The validator that regenerates the edge list (validate_edges.h): it
// accepts the searches' trees, batched or alone, with the reference's edge
// count, whatever the threads; it refuses a tree searched on a CSR that lost
// an edge (which the CSR's own validator passes), and each rule's violation:
// a wrong parent, a level jump, an unreached vertex of the component, an
// isolated vertex marked reached, bad shapes; a bad tree in a batch fails
// alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "bfs_host.h"
#include "construct.h"
#include "kronecker.h"
#include "stats.h"
#include "validate.h"
#include "validate_edges.h"

namespace g500 {
namespace {

const KroneckerParams kGraph{.scale = 11, .edgefactor = 16, .seed = 11, .threads = 3};

struct Fixture {
  Csr g;
  std::vector<PackedEdge> edges;
  std::set<std::pair<uint64_t, uint64_t>> adjacent;  // both directions
  Fixture() {
    EXPECT_TRUE(GenerateKronecker(kGraph, &g).ok());
    edges.resize(uint64_t{kGraph.edgefactor} << kGraph.scale);
    EXPECT_TRUE(GenerateEdges(kGraph, edges).ok());
    for (const PackedEdge &e : edges) {
      adjacent.emplace(e.v0(), e.v1());
      adjacent.emplace(e.v1(), e.v0());
    }
  }
  bool Adjacent(uint64_t a, uint64_t b) const { return adjacent.count({a, b}) > 0; }
};

const Fixture &F() {
  static const Fixture f;
  return f;
}

std::vector<int64_t> Search(const Csr &g, uint64_t root) {
  std::vector<int64_t> p;
  HostBfs(g, root, {.threads = 2}, &p);
  return p;
}

std::vector<int32_t> LevelsOf(const std::vector<int64_t> &p, uint64_t root) {
  std::vector<int32_t> l(p.size(), -1);
  l[root] = 0;
  for (bool more = true; more;) {
    more = false;
    for (uint64_t v = 0; v < p.size(); v++)
      if (p[v] >= 0 && l[v] < 0 && l[p[v]] >= 0) l[v] = l[p[v]] + 1, more = true;
  }
  return l;
}

// A reached vertex at `want` level that is nobody's parent, or SIZE_MAX.
uint64_t Leaf(const std::vector<int64_t> &p, const std::vector<int32_t> &l, int32_t want) {
  std::vector<bool> parent(p.size());
  for (uint64_t v = 0; v < p.size(); v++)
    if (p[v] >= 0 && static_cast<uint64_t>(p[v]) != v) parent[p[v]] = true;
  for (uint64_t v = 0; v < p.size(); v++)
    if (l[v] == want && !parent[v]) return v;
  return SIZE_MAX;
}

// The reference's count: input edges, not self-loops, both ends reached.
uint64_t ReferenceEdgeCount(const std::vector<int64_t> &p) {
  uint64_t n = 0;
  for (const PackedEdge &e : F().edges) n += e.v0() != e.v1() && p[e.v0()] >= 0 && p[e.v1()] >= 0;
  return n;
}

TEST(EdgeListValidator, AcceptsSearchedTreesAloneAndBatched) {
  const auto roots = SampleRoots(F().g, 20, 1);
  ASSERT_EQ(roots.size(), 20u);
  for (unsigned threads : {1u, 4u}) {
    KroneckerParams graph = kGraph;
    graph.threads = threads;
    // 16 trees a pass: a full batch, then 4 trees over the first batch's lanes.
    EdgeListValidator batch(graph, 16);
    ASSERT_TRUE(batch.status().ok()) << batch.status().msg;
    std::vector<Validation> alone, got;
    for (uint64_t r : roots) {
      const auto p = Search(F().g, r);
      ASSERT_TRUE(batch.Add(r, p).ok());
      if (batch.full())
        for (const Validation &v : batch.Check()) got.push_back(v);
      alone.push_back(ValidateAgainstEdgeList(graph, r, p));
      ASSERT_TRUE(alone.back().ok()) << alone.back().msg;
      EXPECT_EQ(alone.back().nedge, ReferenceEdgeCount(p));
      EXPECT_GT(alone.back().nedge, 0u);
    }
    for (const Validation &v : batch.Check()) got.push_back(v);
    ASSERT_EQ(got.size(), roots.size());
    for (size_t i = 0; i < got.size(); i++) {
      EXPECT_TRUE(got[i].ok()) << got[i].msg;
      EXPECT_EQ(got[i].nedge, alone[i].nedge) << i;
      EXPECT_EQ(got[i].reached, alone[i].reached) << i;
      EXPECT_EQ(got[i].depth, alone[i].depth) << i;
    }
    EXPECT_EQ(batch.held(), 0u);
  }
}

// Kernel 1 drops an edge: the search over that CSR leaves a vertex out, and
// the CSR's validator, reading the same CSR, finds nothing wrong.
TEST(EdgeListValidator, CatchesAnEdgeKernelOneLost) {
  const uint64_t root = SampleRoots(F().g, 1, 7).at(0);
  const auto good = Search(F().g, root);
  // A reached vertex with one neighbour (not itself), through one edge.
  uint64_t drop = UINT64_MAX;
  for (uint64_t i = 0; i < F().edges.size() && drop == UINT64_MAX; i++) {
    const uint64_t a = F().edges[i].v0(), b = F().edges[i].v1();
    for (uint64_t x : {a, b}) {
      const auto row = F().g.Row(x);
      if (a != b && good[x] >= 0 && x != root && row.size() == 1) drop = i;
    }
  }
  ASSERT_NE(drop, UINT64_MAX) << "no vertex hangs by one edge";
  std::vector<PackedEdge> lost = F().edges;
  lost.erase(lost.begin() + static_cast<ptrdiff_t>(drop));
  const uint64_t nv = F().g.nv();
  std::vector<uint64_t> off(nv + 1, 0);
  std::vector<uint32_t> cols(2 * lost.size());
  ASSERT_TRUE(BuildCsr(lost, nv, 2, off, cols).ok());
  const Csr bad = Csr::FromArrays(kGraph.scale, kGraph.edgefactor, kGraph.seed, off, cols);
  const auto p = Search(bad, root);
  const Validation old = ValidateBfs(bad, root, p);
  EXPECT_TRUE(old.ok()) << "the CSR's validator should not see it: " << old.msg;
  const Validation v = ValidateAgainstEdgeList(kGraph, root, p);
  EXPECT_EQ(v.error, BfsError::kComponent) << BfsErrorName(v.error) << ": " << v.msg;
}

struct Case {
  const char *name;
  BfsError want;
  void (*mutate)(uint64_t root, const std::vector<int32_t> &l, std::vector<int64_t> &p);
};

const Case kCases[] = {
    {"wrong parent (same level, not adjacent)", BfsError::kNotAnEdge,
     [](uint64_t, const std::vector<int32_t> &l, std::vector<int64_t> &p) {
       for (int32_t want = 2; want < 8; want++) {
         const uint64_t x = Leaf(p, l, want);
         for (uint64_t w = 0; w < p.size() && x != SIZE_MAX; w++)
           if (l[w] == want - 1 && !F().Adjacent(x, w)) {
             p[x] = static_cast<int64_t>(w);
             return;
           }
       }
     }},
    {"level jump", BfsError::kLevelGap,
     [](uint64_t, const std::vector<int32_t> &l, std::vector<int64_t> &p) {
       // A leaf hung under a neighbour of its own level or deeper: deeper
       // still, yet joined to its old parent, two or more levels up.
       std::vector<bool> parent(p.size());
       for (uint64_t v = 0; v < p.size(); v++)
         if (p[v] >= 0 && static_cast<uint64_t>(p[v]) != v) parent[p[v]] = true;
       for (uint64_t x = 0; x < p.size(); x++)
         for (uint64_t w = 0; w < p.size() && l[x] > 0 && !parent[x]; w++)
           if (w != x && l[w] >= l[x] && F().Adjacent(x, w)) {
             p[x] = static_cast<int64_t>(w);
             return;
           }
     }},
    {"unreached vertex of the component", BfsError::kComponent,
     [](uint64_t, const std::vector<int32_t> &l, std::vector<int64_t> &p) {
       p[Leaf(p, l, 2)] = -1;
     }},
    {"isolated vertex marked reached", BfsError::kNotAnEdge,
     [](uint64_t root, const std::vector<int32_t> &, std::vector<int64_t> &p) {
       for (uint64_t v = 0; v < p.size(); v++)
         if (F().g.Degree(v) == 0) {
           p[v] = static_cast<int64_t>(root);
           return;
         }
     }},
    {"two-cycle", BfsError::kCycle,
     [](uint64_t, const std::vector<int32_t> &l, std::vector<int64_t> &p) {
       const uint64_t x = Leaf(p, l, 2);
       p[p[x]] = static_cast<int64_t>(x);
     }},
    {"root not its own parent", BfsError::kRoot,
     [](uint64_t root, const std::vector<int32_t> &, std::vector<int64_t> &p) { p[root] = -1; }},
    {"parent out of range", BfsError::kRange,
     [](uint64_t, const std::vector<int32_t> &l, std::vector<int64_t> &p) {
       p[Leaf(p, l, 2)] = static_cast<int64_t>(p.size());
     }},
    {"short", BfsError::kSize,
     [](uint64_t, const std::vector<int32_t> &, std::vector<int64_t> &p) { p.pop_back(); }},
};

TEST(EdgeListValidator, RefusesEachRulesViolation) {
  const uint64_t root = SampleRoots(F().g, 1, 5).at(0);
  const auto good = Search(F().g, root);
  const auto level = LevelsOf(good, root);
  ASSERT_NE(Leaf(good, level, 2), SIZE_MAX) << "the cases need a leaf at level 2";
  for (const Case &c : kCases) {
    auto p = good;
    c.mutate(root, level, p);
    ASSERT_NE(p, good) << c.name << ": the case changed nothing";
    for (unsigned threads : {1u, 4u}) {
      KroneckerParams graph = kGraph;
      graph.threads = threads;
      const Validation v = ValidateAgainstEdgeList(graph, root, p);
      EXPECT_EQ(v.error, c.want) << c.name << " (" << threads << " threads): got "
                                 << BfsErrorName(v.error) << ": " << v.msg;
      EXPECT_FALSE(v.msg.empty()) << c.name;
    }
  }
}

// In a batch, the bad tree fails and the others pass, in the order added.
TEST(EdgeListValidator, ABadTreeInABatchFailsAlone) {
  const auto roots = SampleRoots(F().g, 3, 9);
  EdgeListValidator val(kGraph, 16);
  std::vector<std::vector<int64_t>> trees;
  for (uint64_t r : roots) trees.push_back(Search(F().g, r));
  const uint64_t leaf = Leaf(trees[1], LevelsOf(trees[1], roots[1]), 2);
  ASSERT_NE(leaf, SIZE_MAX);
  trees[1][leaf] = -1;
  for (size_t i = 0; i < roots.size(); i++) ASSERT_TRUE(val.Add(roots[i], trees[i]).ok());
  const auto got = val.Check();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].ok()) << got[0].msg;
  EXPECT_EQ(got[1].error, BfsError::kComponent) << got[1].msg;
  EXPECT_TRUE(got[2].ok()) << got[2].msg;
}

// A chain deeper than a byte of levels holds is refused, not mistaken.
TEST(EdgeListValidator, RefusesTreesDeeperThanItsLimit) {
  std::vector<int64_t> p(uint64_t{1} << kGraph.scale, -1);
  p[0] = 0;
  for (uint64_t v = 1; v <= 300; v++) p[v] = static_cast<int64_t>(v - 1);
  EdgeListValidator val(kGraph, 16);
  EXPECT_EQ(val.Add(0, p).error, BfsError::kDepth);
  EXPECT_EQ(val.held(), 0u);
}

TEST(EdgeListValidator, CapacityAndBadParameters) {
  EXPECT_EQ(EdgeListValidator::CapacityFor(28, 32ull << 30), 16u);
  EXPECT_EQ(EdgeListValidator::CapacityFor(26, 32ull << 30), 64u);
  EXPECT_EQ(EdgeListValidator::CapacityFor(27, 32ull << 30), 32u);
  EXPECT_EQ(EdgeListValidator::BytesFor(27, 48), (uint64_t{1} << 27) * 296);
  EXPECT_EQ(EdgeListValidator({.scale = 33}, 16).status().code, -EINVAL);
  EXPECT_EQ(EdgeListValidator(kGraph, 65).status().code, -EINVAL);
  EdgeListValidator one(kGraph, 1);
  uint64_t alone = 0;  // a vertex without edges: its tree is itself
  while (F().g.Degree(alone) > 0) alone++;
  std::vector<int64_t> p(uint64_t{1} << kGraph.scale, -1);
  p[alone] = static_cast<int64_t>(alone);
  EXPECT_TRUE(one.Add(alone, p).ok());
  EXPECT_EQ(one.Add(alone, p).error, BfsError::kSize);  // full
  const Validation v = one.Check().at(0);
  EXPECT_TRUE(v.ok()) << v.msg;
  EXPECT_EQ(v.reached, 1u);
  EXPECT_EQ(v.nedge, 0u);
}

}  // namespace
}  // namespace g500
