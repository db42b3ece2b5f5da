// SPDX-License-Identifier: Apache-2.0
// The Graph500 example's searches and validation: the validator accepts the
// trees the searches make and refuses each kind of broken tree (a table);
// the in-memory search (top-down and direction-optimizing, any threads) and
// the search that reads the file with cuFileRead give valid trees with the
// same levels; a file cut short during a search is an error, not a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "bfs_file.h"
#include "bfs_host.h"
#include "kronecker.h"
#include "levels.h"
#include "stats.h"
#include "support/test_util.h"
#include "validate.h"

namespace g500 {
namespace {

Csr Generate(uint32_t scale) {
  Csr g;
  EXPECT_TRUE(GenerateKronecker({.scale = scale, .seed = 11}, &g).ok());
  return g;
}

// A reached vertex at `want` level that no vertex has as its parent, or
// SIZE_MAX.
uint64_t Leaf(const std::vector<int64_t> &parent, const std::vector<int32_t> &level, int32_t want) {
  std::vector<bool> is_parent(parent.size());
  for (uint64_t v = 0; v < parent.size(); v++)
    if (parent[v] >= 0 && static_cast<uint64_t>(parent[v]) != v) is_parent[parent[v]] = true;
  for (uint64_t v = 0; v < parent.size(); v++)
    if (level[v] == want && !is_parent[v]) return v;
  return SIZE_MAX;
}

struct Broken {
  const char *name;
  BfsError want;
  // Breaks the tree of root r (levels l) in place.
  std::function<void(const Csr &, uint64_t r, const std::vector<int32_t> &l,
                     std::vector<int64_t> &p)>
      mutate;
};

const Broken kBroken[] = {
    {"short", BfsError::kSize, [](auto &, auto, auto &, auto &p) { p.pop_back(); }},
    {"root", BfsError::kRoot, [](auto &, auto r, auto &, auto &p) { p[r] = -1; }},
    {"range-high", BfsError::kRange,
     [](auto &g, auto, auto &l, auto &p) { p[Leaf(p, l, 2)] = static_cast<int64_t>(g.nv()); }},
    {"range-low", BfsError::kRange, [](auto &, auto, auto &l, auto &p) { p[Leaf(p, l, 2)] = -5; }},
    {"self-parent", BfsError::kCycle,
     [](auto &, auto, auto &l, auto &p) {
       const uint64_t x = Leaf(p, l, 2);
       p[x] = x;
     }},
    {"two-cycle", BfsError::kCycle,
     [](auto &, auto, auto &l, auto &p) {
       const uint64_t x = Leaf(p, l, 2), y = static_cast<uint64_t>(p[x]);
       p[y] = static_cast<int64_t>(x);
     }},
    {"parent-unreached", BfsError::kCycle,
     [](auto &g, auto, auto &l, auto &p) {
       for (uint64_t u = 0; u < g.nv(); u++)
         if (p[u] == -1) {
           p[Leaf(p, l, 2)] = static_cast<int64_t>(u);
           return;
         }
     }},
    {"not-an-edge", BfsError::kNotAnEdge,
     [](auto &g, auto, auto &l, auto &p) {
       const uint64_t x = Leaf(p, l, 2);
       for (uint64_t w = 0; w < g.nv(); w++)
         if (l[w] == 1 && !g.HasEdge(x, static_cast<uint32_t>(w))) {
           p[x] = static_cast<int64_t>(w);
           return;
         }
     }},
    {"level-gap", BfsError::kLevelGap,
     [](auto &g, auto, auto &l, auto &p) {
       // A leaf hung under a neighbour of its own level: one level deeper,
       // yet still joined to its old parent, two levels up.
       for (int32_t want = 1; want < 8; want++) {
         const uint64_t x = Leaf(p, l, want);
         if (x == SIZE_MAX) continue;
         for (uint32_t u : g.Row(x))
           if (l[u] == want && u != x) {
             p[x] = u;
             return;
           }
       }
     }},
    {"component", BfsError::kComponent,
     [](auto &, auto, auto &l, auto &p) { p[Leaf(p, l, 2)] = -1; }},
};

TEST(Validate, AcceptsTheTreesOfEverySearch) {
  const Csr g = Generate(12);
  for (uint64_t root : SampleRoots(g, 8, 1)) {
    std::vector<int64_t> p;
    HostBfs(g, root, {.threads = 3}, &p);
    const Validation v = ValidateBfs(g, root, p, 2);
    ASSERT_TRUE(v.ok()) << BfsErrorName(v.error) << ": " << v.msg;
    EXPECT_GT(v.reached, 1u);
    EXPECT_GT(v.nedge, 0u);
    EXPECT_LE(v.nedge, g.ne() / 2);
  }
}

TEST(Validate, RefusesEachKindOfBrokenTree) {
  const Csr g = Generate(11);
  const uint64_t root = SampleRoots(g, 1, 5).at(0);
  std::vector<int64_t> good;
  HostBfs(g, root, {}, &good);
  const std::vector<int32_t> level = Levels(g, root, good);
  ASSERT_NE(Leaf(good, level, 2), SIZE_MAX) << "the cases need a leaf at level 2";
  for (const Broken &b : kBroken) {
    std::vector<int64_t> p = good;
    b.mutate(g, root, level, p);
    ASSERT_NE(p, good) << b.name << ": the case changed nothing";
    for (unsigned threads : {1u, 4u}) {
      const Validation v = ValidateBfs(g, root, p, threads);
      EXPECT_EQ(v.error, b.want) << b.name << " (" << threads << " threads): got "
                                 << BfsErrorName(v.error) << ": " << v.msg;
      EXPECT_FALSE(v.msg.empty()) << b.name;
    }
  }
}

// nedge counts the input edges of the root's component: here, all of a
// connected graph's, self-loops and duplicates included.
TEST(Validate, CountsEveryInputEdgeOfTheComponent) {
  // 0-1, 1-2, 1-2 again, 2-2 (a self-loop), 3 alone.
  std::vector<uint64_t> off{0, 1, 4, 8, 8};
  std::vector<uint32_t> cols{1, 0, 2, 2, 1, 1, 2, 2};
  const Csr g = Csr::FromArrays(2, 1, 0, off, cols);
  const Validation v = ValidateBfs(g, 0, {0, 0, 1, -1});
  ASSERT_TRUE(v.ok()) << v.msg;
  EXPECT_EQ(v.nedge, 4u);
  EXPECT_EQ(v.reached, 3u);
  EXPECT_EQ(v.depth, 2u);
}

class Searches : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Searches, InMemoryAndFileSearchesAgree) {
  const uint32_t scale = GetParam();
  const Csr g = Generate(scale);
  ufile::test::TempDir dir;
  const std::string path = dir.File("g.g500");
  ASSERT_TRUE(WriteCsr(g, path).ok());
  GraphFile f;
  const Status open = f.Open(path);
  ASSERT_TRUE(open.ok()) << open.msg;
  for (uint64_t root : SampleRoots(g, 4, scale)) {
    std::vector<int64_t> p;
    HostBfs(g, root, {.threads = 1}, &p);
    const std::vector<int32_t> want = Levels(g, root, p);
    for (const HostBfsOptions o : {HostBfsOptions{.threads = 4},
                                   HostBfsOptions{.threads = 4, .direction_optimizing = true}}) {
      HostBfs(g, root, o, &p);
      const Validation v = ValidateBfs(g, root, p);
      ASSERT_TRUE(v.ok()) << "host, do=" << o.direction_optimizing << ": " << v.msg;
      EXPECT_EQ(Levels(g, root, p), want);
    }
    // Small buffers: long lists read in pieces; merged and single reads.
    for (const FileBfsOptions o :
         {FileBfsOptions{.threads = 3},
          FileBfsOptions{
              .threads = 2, .buffer_bytes = 64, .merge_gap_bytes = 0, .chunk_vertices = 5}}) {
      FileBfsStats st;
      const Status s = FileBfs(f, root, o, &p, &st);
      ASSERT_TRUE(s.ok()) << s.msg;
      const Validation v = ValidateBfs(g, root, p);
      ASSERT_TRUE(v.ok()) << "file, buffer " << o.buffer_bytes << ": " << v.msg;
      EXPECT_EQ(Levels(g, root, p), want);
      EXPECT_GE(st.bytes_read, 8 * v.nedge);  // every list of the component, whole
      EXPECT_GT(st.reads, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Scales, Searches, ::testing::Values(10u, 12u, 14u));

TEST(FileBfs, AFileCutShortIsAnError) {
  const Csr g = Generate(10);
  ufile::test::TempDir dir;
  const std::string path = dir.File("g.g500");
  ASSERT_TRUE(WriteCsr(g, path).ok());
  GraphFile f;
  ASSERT_TRUE(f.Open(path).ok());
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(g.header().cols_off + 16)), 0);
  std::vector<int64_t> p;
  FileBfsStats st;
  const Status s = FileBfs(f, SampleRoots(g, 1, 1).at(0), {.threads = 2}, &p, &st);
  EXPECT_EQ(s.code, -EIO) << s.msg;
  EXPECT_NE(s.msg.find("shorter than its row offsets"), std::string::npos) << s.msg;
  EXPECT_EQ(FileBfs(f, g.nv(), {}, &p, &st).code, -EINVAL);
}

}  // namespace
}  // namespace g500
