// SPDX-License-Identifier: Apache-2.0
// The Graph500 example's generator, kernel 1, graph file and statistics: the
// same graph and byte-identical files for a seed whatever the threads,
// 48-bit labels, the label scrambling a bijection, kernel 1 against a plain
// sort, Kronecker quadrant frequencies and a skewed degree distribution, the
// file read back as written, damaged files refused with a reason, the search
// keys and the output statistics.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "bfs_file.h"
#include "construct.h"
#include "kronecker.h"
#include "stats.h"
#include "support/test_util.h"

namespace g500 {
namespace {

Csr Generate(uint32_t scale, uint64_t seed, unsigned threads) {
  Csr g;
  const Status s = GenerateKronecker({.scale = scale, .seed = seed, .threads = threads}, &g);
  EXPECT_TRUE(s.ok()) << s.msg;
  return g;
}

bool SameGraph(const Csr &a, const Csr &b) {
  return a.nv() == b.nv() &&
         std::equal(a.offsets().begin(), a.offsets().end(), b.offsets().begin(),
                    b.offsets().end()) &&
         std::equal(a.cols().begin(), a.cols().end(), b.cols().begin(), b.cols().end());
}

TEST(Kronecker, SameSeedSameGraphWhateverTheThreads) {
  for (uint32_t scale : {10u, 12u}) {
    const Csr one = Generate(scale, 7, 1);
    EXPECT_TRUE(SameGraph(one, Generate(scale, 7, 3))) << "scale " << scale;
    EXPECT_TRUE(SameGraph(one, Generate(scale, 7, 8))) << "scale " << scale;
    EXPECT_FALSE(SameGraph(one, Generate(scale, 8, 1))) << "scale " << scale;
  }
}

// The files of one graph made by 1 and by several threads are identical (the
// header's times set alike: they are the only bytes that may differ).
TEST(Kronecker, FilesAreByteIdenticalWhateverTheThreads) {
  ufile::test::TempDir dir;
  std::vector<std::vector<uint8_t>> files;
  for (unsigned threads : {1u, 2u, 5u, 16u}) {
    Csr g = Generate(13, 21, threads);
    g.SetTimes(0, 0);
    const std::string path = dir.File("g" + std::to_string(threads));
    ASSERT_TRUE(WriteCsr(g, path, threads).ok());
    files.push_back(ufile::test::ReadWholeFile(path));
  }
  for (size_t i = 1; i < files.size(); i++) EXPECT_TRUE(files[i] == files[0]) << i;
}

// Kernel 1 against the plainest construction: sort both directions of every
// edge.
TEST(Kronecker, KernelOneMatchesASort) {
  const KroneckerParams p{.scale = 11, .edgefactor = 8, .seed = 4};
  const uint64_t nv = 1u << p.scale, m = nv * p.edgefactor;
  std::vector<PackedEdge> edges(m);
  ASSERT_TRUE(GenerateEdges(p, edges).ok());
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (const PackedEdge &e : edges) {
    pairs.emplace_back(e.v0(), e.v1());
    pairs.emplace_back(e.v1(), e.v0());
  }
  std::sort(pairs.begin(), pairs.end());
  // Chunks: one, and many with a short last one.
  for (auto [threads, chunk] : {std::pair{1u, kKernelOneChunkEdges}, std::pair{3u, uint64_t{1000}},
                                std::pair{8u, uint64_t{4096}}}) {
    std::vector<uint64_t> off(nv + 1, 0);
    std::vector<uint32_t> cols(2 * m);
    ASSERT_TRUE(BuildCsr(edges, nv, threads, off, cols, chunk).ok());
    ASSERT_EQ(off[0], 0u);
    for (uint64_t k = 0; k < pairs.size(); k++) {
      const uint32_t v = pairs[k].first;
      ASSERT_TRUE(off[v] <= k && k < off[v + 1]) << threads << " threads, entry " << k;
      ASSERT_EQ(cols[k], pairs[k].second) << threads << " threads, entry " << k;
    }
  }
}

TEST(Kronecker, KernelOneRefusesBadInput) {
  std::vector<PackedEdge> edges{PackedEdge::Make(1, 2), PackedEdge::Make(3, 4)};
  std::vector<uint64_t> off(5, 0);
  std::vector<uint32_t> cols(4);
  EXPECT_EQ(BuildCsr(edges, 4, 2, off, cols).code, -EINVAL);  // 4 is not below 4
  std::fill(off.begin(), off.end(), 0);
  EXPECT_EQ(BuildCsr(edges, 4, 2, off, std::span(cols).first(3)).code, -EINVAL);
  EXPECT_EQ(BuildCsr(edges, 0, 2, std::span(off).first(1), cols).code, -EINVAL);
  std::vector<uint64_t> off9(9, 0);
  EXPECT_EQ(BuildCsr(edges, 8, 2, off9, cols, 0).code, -EINVAL);  // no chunk
}

// Labels of 48 bits survive the edge list's packing; a scale-40 edge list
// has labels above 2^32.
TEST(Kronecker, LabelsHave48Bits) {
  const uint64_t a = (uint64_t{1} << 48) - 1, b = (uint64_t{1} << 47) + 5;
  const PackedEdge e = PackedEdge::Make(a, b);
  EXPECT_EQ(e.v0(), a);
  EXPECT_EQ(e.v1(), b);
  EXPECT_EQ(PackedEdge::Make(b, 7).v0(), b);
  const EdgeSource edge(40, 3);
  uint64_t high = 0;
  for (uint64_t i = 0; i < 1000; i++) {
    const auto [u, v] = edge(i);
    ASSERT_LT(u, uint64_t{1} << 40);
    ASSERT_LT(v, uint64_t{1} << 40);
    high += (u >> 32) != 0;
  }
  EXPECT_GT(high, 900u);
  EXPECT_EQ(GenerateEdges({.scale = 49}, {}).code, -EINVAL);
}

TEST(Kronecker, CountsAndRows) {
  for (uint32_t scale = 10; scale <= 14; scale++) {
    const Csr g = Generate(scale, 1, 0);
    const uint64_t nv = uint64_t{1} << scale;
    ASSERT_EQ(g.nv(), nv);
    ASSERT_EQ(g.ne(), 2 * 16 * nv);  // both directions of every input edge
    ASSERT_EQ(g.offsets()[nv], g.ne());
    for (uint64_t v = 0; v < nv; v++) {
      const auto row = g.Row(v);
      ASSERT_TRUE(std::is_sorted(row.begin(), row.end())) << v;
      ASSERT_TRUE(row.empty() || row.back() < nv) << v;
    }
  }
}

// Undirected: u in v's row as many times as v in u's.
TEST(Kronecker, RowsAreSymmetric) {
  const Csr g = Generate(11, 3, 0);
  for (uint64_t v = 0; v < g.nv(); v++)
    for (uint32_t u : g.Row(v)) {
      const auto ru = g.Row(u), rv = g.Row(v);
      ASSERT_EQ(std::count(ru.begin(), ru.end(), static_cast<uint32_t>(v)),
                std::count(rv.begin(), rv.end(), u))
          << v << " - " << u;
    }
}

// Each level picks quadrant (0,0), (0,1), (1,0), (1,1) with A, B, C, D.
TEST(Kronecker, QuadrantFrequenciesMatchTheInitiator) {
  const uint32_t scale = 8;
  const uint64_t n = 200000;
  double q[4] = {0, 0, 0, 0};
  for (uint64_t i = 0; i < n; i++) {
    const auto [u, v] = KroneckerEdge(scale, 5, i);
    for (uint32_t b = 0; b < scale; b++) q[((u >> b) & 1) * 2 + ((v >> b) & 1)] += 1;
  }
  const double want[4] = {0.57, 0.19, 0.19, 0.05};
  for (int k = 0; k < 4; k++) EXPECT_NEAR(q[k] / (n * scale), want[k], 0.003) << "quadrant " << k;
}

// A skewed graph: a few hubs, many vertices of low or no degree.
TEST(Kronecker, DegreesAreSkewed) {
  const Csr g = Generate(14, 1, 0);
  uint64_t max_deg = 0, isolated = 0;
  for (uint64_t v = 0; v < g.nv(); v++) {
    max_deg = std::max(max_deg, g.Degree(v));
    isolated += g.Degree(v) == 0;
  }
  EXPECT_GT(max_deg, 50u * 32);  // the mean degree is 32
  EXPECT_GT(isolated, g.nv() / 10);
  EXPECT_LT(isolated, g.nv() * 7 / 10);
}

// The labels are a permutation of [0, 2^scale), different for another seed,
// far from the identity.
TEST(Kronecker, ScramblingIsABijection) {
  for (uint32_t scale = 1; scale <= 16; scale++) {
    const uint64_t n = uint64_t{1} << scale;
    const Scrambler label(scale, 9), other(scale, 10);
    std::vector<uint8_t> hit(n, 0);
    uint64_t fixed = 0, same = 0;
    for (uint64_t v = 0; v < n; v++) {
      const uint64_t x = label(v);
      ASSERT_LT(x, n) << scale;
      ASSERT_EQ(hit[x]++, 0) << "scale " << scale << ": " << x << " twice";
      fixed += x == v;
      same += x == other(v);
      ASSERT_EQ(x, ScrambleVertex(scale, 9, v));
    }
    if (scale >= 8) {
      EXPECT_LT(fixed, n / 16) << scale;
      EXPECT_LT(same, n / 16) << scale;
    }
  }
}

TEST(Kronecker, BadParametersAreRefused) {
  Csr g;
  for (KroneckerParams p :
       {KroneckerParams{.scale = 0}, KroneckerParams{.scale = 33}, KroneckerParams{.scale = 40},
        KroneckerParams{.scale = 4, .edgefactor = 0}}) {
    const Status s = GenerateKronecker(p, &g);
    EXPECT_EQ(s.code, -EINVAL) << p.scale << " " << p.edgefactor;
    EXPECT_NE(s.msg.find("scale must be"), std::string::npos) << s.msg;
  }
}

TEST(CsrFile, RoundTrip) {
  ufile::test::TempDir dir;
  const Csr g = Generate(12, 4, 0);
  const std::string path = dir.File("g.g500");
  ASSERT_TRUE(WriteCsr(g, path).ok());
  Csr m;
  const Status s = MapCsr(path, &m);
  ASSERT_TRUE(s.ok()) << s.msg;
  EXPECT_EQ(0, std::memcmp(&g.header(), &m.header(), sizeof(CsrHeader)));
  EXPECT_TRUE(SameGraph(g, m));
  GraphFile f;
  ASSERT_TRUE(f.Open(path).ok());
  const uint64_t v = 77, n = g.Degree(v);
  std::vector<uint32_t> row(n + 1);
  ASSERT_EQ(f.ReadCols(row.data(), 0, g.offsets()[v], n), static_cast<int64_t>(4 * n));
  EXPECT_TRUE(std::equal(row.begin(), row.begin() + static_cast<ptrdiff_t>(n), g.Row(v).begin()));
  std::vector<uint32_t> tail(8);  // past the end: a short read, no error
  EXPECT_EQ(f.ReadCols(tail.data(), 0, g.ne() - 2, 8), 8);
}

// A damaged file: each refused with -EINVAL (or its errno) and a reason.
TEST(CsrFile, DamagedFilesAreRefused) {
  ufile::test::TempDir dir;
  const std::string good = dir.File("good.g500");
  ASSERT_TRUE(WriteCsr(Generate(10, 1, 0), good).ok());
  const auto bytes = ufile::test::ReadWholeFile(good);
  struct Case {
    const char *name;
    size_t at;  // byte to change, or SIZE_MAX to truncate
    uint8_t value;
    const char *reason;
  } cases[] = {
      {"magic", 0, 'X', "magic"},
      {"version", 8, 9, "version"},
      {"scale", 12, 11, "scale/nv"},
      {"truncated", SIZE_MAX, 0, "size"},
      {"offsets", 4096 + 8 * 5 + 7, 0x7f, "row offsets"},
  };
  for (const Case &c : cases) {
    auto b = bytes;
    if (c.at == SIZE_MAX)
      b.resize(b.size() - 4);
    else
      b[c.at] = c.value;
    const std::string path = dir.File(std::string(c.name) + ".g500");
    ufile::test::WriteWholeFile(path, b);
    Csr m;
    const Status s = MapCsr(path, &m);
    EXPECT_EQ(s.code, -EINVAL) << c.name << ": " << s.msg;
    EXPECT_NE(s.msg.find(c.reason), std::string::npos) << c.name << ": " << s.msg;
  }
  Csr m;
  EXPECT_EQ(MapCsr(dir.File("missing"), &m).code, -ENOENT);
  GraphFile f;
  EXPECT_EQ(f.Open(dir.File("missing")).code, -ENOENT);
}

TEST(Stats, RootsAreDistinctAndConnected) {
  const Csr g = Generate(12, 1, 0);
  const auto roots = SampleRoots(g, 64, 3);
  ASSERT_EQ(roots.size(), 64u);
  EXPECT_EQ(std::set<uint64_t>(roots.begin(), roots.end()).size(), 64u);
  for (uint64_t r : roots) {
    const auto row = g.Row(r);
    EXPECT_TRUE(std::any_of(row.begin(), row.end(), [r](uint32_t u) { return u != r; })) << r;
  }
  EXPECT_EQ(roots, SampleRoots(g, 64, 3));
  EXPECT_NE(roots, SampleRoots(g, 64, 4));
  // From the generator's seed: the same salt on another seed's graph differs.
  const Csr other = Generate(12, 2, 0);
  EXPECT_NE(roots, SampleRoots(other, 64, 3));
}

// Only vertices with an edge to another vertex are roots: here 0 and 1 (2
// has a self-loop only, 3 nothing), so two roots of the 64 asked.
TEST(Stats, RootsNeedAnEdgeOtherThanASelfLoop) {
  const Csr g = Csr::FromArrays(2, 1, 5, {0, 1, 2, 4, 4}, {1, 0, 2, 2});
  auto roots = SampleRoots(g, 64, 1);
  std::sort(roots.begin(), roots.end());
  EXPECT_EQ(roots, (std::vector<uint64_t>{0, 1}));
}

TEST(Stats, QuartilesAndHarmonicMean) {
  std::vector<double> x;
  for (int i = 64; i >= 1; i--) x.push_back(i);
  const Summary s = Summarise(x, true);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 64);
  EXPECT_EQ(s.q1, 16.5);  // between the 16th and 17th of 64
  EXPECT_EQ(s.median, 32.5);
  EXPECT_EQ(s.q3, 48.5);
  EXPECT_DOUBLE_EQ(s.mean, 32.5);
  const Summary five = Summarise({5, 1, 4, 2, 3}, false);
  EXPECT_EQ(five.q1, 2);
  EXPECT_EQ(five.median, 3);
  EXPECT_EQ(five.q3, 4);
  const Summary h = Summarise({1, 2, 4}, true);
  EXPECT_DOUBLE_EQ(h.hmean, 3 / 1.75);
  EXPECT_EQ(h.median, 2);
  EXPECT_GT(h.hstddev, 0);
}

// A parser of the reference's output: `name: value` lines, a block per mode.
std::vector<std::map<std::string, std::string>> ParseBlocks(const std::string &text) {
  std::vector<std::map<std::string, std::string>> blocks;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    const size_t at = line.find_first_not_of(' ', colon + 1);
    const std::string value = at == std::string::npos ? "" : line.substr(at);
    if (key == "mode") blocks.emplace_back();
    if (!blocks.empty()) blocks.back()[key] = value;
  }
  return blocks;
}

TEST(Stats, OutputBlocksParseWithTheReferencesFields) {
  CsrHeader h{};
  h.scale = 20;
  h.edgefactor = 16;
  h.generation_s = 1.5;
  h.construction_s = 0.25;
  std::vector<RunRecord> runs;
  for (int i = 1; i <= 64; i++)
    runs.push_back({.seconds = 0.01 * i,
                    .nedge = 1000u * static_cast<unsigned>(i % 7 + 1),
                    .validate_seconds = 0.5});
  char *buf = nullptr;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ASSERT_NE(out, nullptr);
  PrintGraph500(out, "host-do", "", h, runs);
  std::fprintf(out, "\n");
  PrintGraph500(out, "file", " (cold page cache)", h, runs);
  std::fclose(out);
  const std::string text(buf, len);
  std::free(buf);
  const auto blocks = ParseBlocks(text);
  ASSERT_EQ(blocks.size(), 2u) << text;
  EXPECT_EQ(blocks[0].at("mode"), "host-do");
  EXPECT_EQ(blocks[1].at("mode"), "file (cold page cache)");
  std::vector<std::string> fields{
      "SCALE", "edgefactor", "NBFS", "graph_generation", "num_mpi_processes", "construction_time"};
  for (const char *stat : {"min", "firstquartile", "median", "thirdquartile", "max"})
    for (const char *what : {"time", "nedge", "TEPS", "validate"})
      fields.push_back(std::string("bfs_") + stat + "_" + what);
  for (const char *what : {"time", "nedge", "validate"}) {
    fields.push_back(std::string("bfs_mean_") + what);
    fields.push_back(std::string("bfs_stddev_") + what);
  }
  fields.push_back("bfs_harmonic_mean_TEPS");
  fields.push_back("bfs_harmonic_stddev_TEPS");
  for (const auto &b : blocks)
    for (const std::string &f : fields) {
      ASSERT_EQ(b.count(f), 1u) << f << " missing:\n" << text;
      if (f != "mode") {
        char *end = nullptr;
        std::strtod(b.at(f).c_str(), &end);
        EXPECT_EQ(*end, '\0') << f << " is not a number: " << b.at(f);
      }
    }
  const auto &b = blocks[0];
  EXPECT_EQ(b.at("SCALE"), "20");
  EXPECT_EQ(b.at("NBFS"), "64");
  EXPECT_EQ(b.at("num_mpi_processes"), "1");
  EXPECT_EQ(b.at("construction_time"), "0.25");
  EXPECT_EQ(b.at("graph_generation"), "1.5");
  // TEPS as the reference: the harmonic mean is 1 / mean(seconds / nedge).
  double spe = 0;
  for (const RunRecord &r : runs) spe += r.seconds / static_cast<double>(r.nedge);
  EXPECT_NEAR(std::strtod(b.at("bfs_harmonic_mean_TEPS").c_str(), nullptr), 64 / spe,
              64 / spe * 1e-5);
  EXPECT_EQ(b.at("bfs_max_nedge"), "7000");
  // Padded to 32 columns as the reference prints them.
  EXPECT_NE(text.find("SCALE:                          20\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace g500
