// SPDX-License-Identifier: Apache-2.0
// The Graph500 example's searches and validation: the validator accepts the
// trees the searches make and refuses each kind of broken tree (a table);
// the in-memory search (top-down and direction-optimizing, any threads) and
// the search that reads the file with cuFileRead give valid trees with the
// same levels; the direction-optimizing search turns bottom-up and back; the
// CPU modes behind SearchMode agree; a file cut short during a search is an
// error, not a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "bfs_file.h"
#include "bfs_host.h"
#include "cli.h"
#include "kronecker.h"
#include "levels.h"
#include "search_mode.h"
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
       for (int32_t want = 2; want < 8; want++) {  // a level above with a vertex not adjacent
         const uint64_t x = Leaf(p, l, want);
         for (uint64_t w = 0; w < g.nv() && x != SIZE_MAX; w++)
           if (l[w] == want - 1 && !g.HasEdge(x, static_cast<uint32_t>(w))) {
             p[x] = static_cast<int64_t>(w);
             return;
           }
       }
     }},
    {"level-gap", BfsError::kLevelGap,
     [](auto &g, auto, auto &l, auto &p) {
       // A leaf hung under a neighbour of its own level or deeper: deeper
       // still, yet joined to its old parent, two or more levels up.
       for (int32_t want = 1; want < 8; want++)
         for (uint64_t x = 0; x < p.size(); x++) {
           const bool leaf = std::find(p.begin(), p.end(), static_cast<int64_t>(x)) == p.end();
           if (l[x] != want || !leaf) continue;
           for (uint32_t u : g.Row(x))
             if (l[u] >= want && u != x) {
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
    for (const HostBfsOptions o :
         {HostBfsOptions{.threads = 4}, HostBfsOptions{.threads = 1, .direction_optimizing = true},
          HostBfsOptions{.threads = 5, .direction_optimizing = true}}) {
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

// A clique of 48 vertices with a path of 3000 hanging from vertex 0: from a
// clique vertex the search turns bottom-up (the clique's edges outweigh the
// rest) and back to top-down for the path, one vertex a level.
Csr CliqueWithTail() {
  constexpr uint32_t kClique = 48, kPath = 3000, kNv = kClique + kPath;
  std::vector<std::vector<uint32_t>> adj(kNv);
  auto edge = [&](uint32_t a, uint32_t b) { adj[a].push_back(b), adj[b].push_back(a); };
  for (uint32_t a = 0; a < kClique; a++)
    for (uint32_t b = a + 1; b < kClique; b++) edge(a, b);
  edge(0, kClique);
  for (uint32_t v = kClique; v + 1 < kNv; v++) edge(v, v + 1);
  std::vector<uint64_t> off{0};
  std::vector<uint32_t> cols;
  for (auto &row : adj) {
    std::sort(row.begin(), row.end());
    cols.insert(cols.end(), row.begin(), row.end());
    off.push_back(cols.size());
  }
  return Csr::FromArrays(12, 1, 0, off, cols);
}

TEST(HostBfs, DirectionOptimizingTurnsBottomUpAndBack) {
  const Csr g = CliqueWithTail();
  std::vector<int64_t> want, p;
  HostBfs(g, 1, {.threads = 1}, &want);
  const std::vector<int32_t> levels = Levels(g, 1, want);
  ASSERT_EQ(*std::max_element(levels.begin(), levels.end()), 3001);
  for (unsigned threads : {1u, 3u, 8u}) {
    const HostBfsLevels n = HostBfs(g, 1, {.threads = threads, .direction_optimizing = true}, &p);
    const Validation v = ValidateBfs(g, 1, p);
    ASSERT_TRUE(v.ok()) << threads << " threads: " << v.msg;
    EXPECT_EQ(Levels(g, 1, p), levels) << threads << " threads";
    // Bottom-up for the clique (and for the path's last levels, once few
    // edges are left unexplored), top-down along the path.
    EXPECT_GE(n.bottom_up, 1u);
    EXPECT_GT(n.top_down, 2900u);
    EXPECT_EQ(n.top_down + n.bottom_up, 3002u);
  }
  EXPECT_EQ(HostBfs(g, 1, {.threads = 2}, &p).bottom_up, 0u) << "top-down only";
}

// On a Kronecker graph the bottom-up levels stop at the first parent found:
// the direction-optimizing search reads a fraction of the column entries.
TEST(HostBfs, DirectionOptimizingExaminesFewerEdges) {
  const Csr g = Generate(14);
  const uint64_t root = SampleRoots(g, 1, 7).at(0);
  std::vector<int64_t> p;
  const HostBfsLevels td = HostBfs(g, root, {.threads = 2}, &p);
  const HostBfsLevels dir = HostBfs(g, root, {.threads = 2, .direction_optimizing = true}, &p);
  EXPECT_EQ(td.edges_examined, 2 * ValidateBfs(g, root, p).nedge);
  EXPECT_GT(dir.bottom_up, 0u);
  EXPECT_LT(dir.edges_examined * 2, td.edges_examined);
}

TEST(SearchModes, TheCpuModesAgreeBehindOneInterface) {
  const Csr g = Generate(11);
  ufile::test::TempDir dir;
  const std::string path = dir.File("g.g500");
  ASSERT_TRUE(WriteCsr(g, path).ok());
  Csr mapped;
  ASSERT_TRUE(MapCsr(path, &mapped).ok());
  GraphFile f;
  ASSERT_TRUE(f.Open(path).ok());
  const uint64_t root = SampleRoots(g, 1, 3).at(0);
  std::vector<int64_t> want;
  HostBfs(g, root, {.threads = 1}, &want);
  for (const std::string &name : CpuModeNames()) {
    std::unique_ptr<SearchMode> m;
    const Status s = OpenCpuMode(name, mapped, f, {.threads = 3}, &m);
    ASSERT_TRUE(s.ok()) << name << ": " << s.msg;
    ASSERT_TRUE(m->Search(root).ok()) << name;
    std::vector<int64_t> p;
    ASSERT_TRUE(m->Tree(&p).ok()) << name;
    const Validation v = ValidateBfs(g, root, p);
    ASSERT_TRUE(v.ok()) << name << ": " << v.msg;
    EXPECT_EQ(Levels(g, root, p), Levels(g, root, want)) << name;
    EXPECT_EQ(m->Search(g.nv()).code, -EINVAL) << name << ": a root out of range";
    EXPECT_EQ(m->Counters().bytes_read > 0, name == "file") << name;
  }
  std::unique_ptr<SearchMode> m;
  EXPECT_EQ(OpenCpuMode("gpu-devio", mapped, f, {}, &m).code, -EINVAL);
  EXPECT_EQ(OpenCpuMode("", mapped, f, {}, &m).code, -EINVAL);
}

// --gpu-memory-limit and --hostio-buffer: a table of inputs and what each gives.
TEST(Cli, ParseBytesTakesBinarySuffixesAndRefusesTheRest) {
  const struct {
    const char *in;
    bool ok;
    uint64_t want;
  } kCases[] = {
      {"4096", true, 4096},    {"8G", true, 8ull << 30}, {"96M", true, 96ull << 20},
      {"1k", true, 1024},      {"2T", true, 2ull << 40}, {"0", false, 0},
      {"", false, 0},          {"G", false, 0},          {"12x", false, 0},
      {"-1G", false, 0},       {"1.5G", false, 0},       {"1g", false, 0},
      {"16777216T", false, 0},  // past 2^64
  };
  for (const auto &c : kCases) {
    uint64_t v = 7;
    EXPECT_EQ(ParseBytes(c.in, 1, &v), c.ok) << c.in;
    if (c.ok) {
      EXPECT_EQ(v, c.want) << c.in;
    }
  }
  uint64_t v = 0;
  EXPECT_FALSE(ParseBytes("2k", 4096, &v)) << "under the minimum";
}

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
