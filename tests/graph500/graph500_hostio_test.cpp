// SPDX-License-Identifier: Apache-2.0
// The host side of the host-driven GPU search (bfs_hostio.cpp) against a
// stand-in for its GPU side in host memory (ufile reads pageable memory
// without a GPU): batches of every size down to one list piece, requests
// merged across gaps or not, any number of reader threads, give the same
// levels as the in-memory search and valid trees; every list of the
// component is read; a file cut short is an error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bfs_host.h"
#include "bfs_hostio.h"
#include "kronecker.h"
#include "levels.h"
#include "stats.h"
#include "support/test_util.h"
#include "validate.h"

namespace g500::gpu {

// The stand-in: the same contract as bfs_hostio.cu, in host memory.
struct HostioGpu {
  uint64_t nv = 0, index_entries = 0;
  std::vector<uint32_t> buf[2];
  std::vector<int64_t> parent;
  std::vector<uint32_t> cur, next;
  uint64_t batches = 0;
};

int OpenHostioGpu(uint64_t nv, uint64_t buffer_entries, uint64_t index_entries, HostioGpu **out,
                  std::string *err) {
  auto *g = new HostioGpu;
  *out = g;
  if (buffer_entries == 0 || index_entries == 0) return *err = "bad sizes", -EINVAL;
  g->nv = nv;
  g->index_entries = index_entries;
  for (auto &b : g->buf) b.assign(buffer_entries, 0xdeadbeefu);
  return 0;
}
uint32_t *HostioBuffer(HostioGpu *g, int slot) {
  return g->buf[slot].data();
}
int HostioStart(HostioGpu *g, uint64_t root, std::string *) {
  g->parent.assign(g->nv, -1);
  g->parent[root] = static_cast<int64_t>(root);
  g->cur = {static_cast<uint32_t>(root)};
  g->next.clear();
  return 0;
}
int HostioFrontier(HostioGpu *g, uint64_t ncur, const uint32_t **v, std::string *err) {
  if (ncur != g->cur.size()) return *err = "frontier size", -EINVAL;
  std::sort(g->cur.begin(), g->cur.end());
  *v = g->cur.data();
  return 0;
}
int HostioWait(HostioGpu *, int, std::string *) {
  return 0;
}
int HostioExpand(HostioGpu *g, int slot, const HostioBatch &b, std::string *err) {
  if (b.n > g->index_entries) return *err = "batch larger than its index", -EINVAL;
  g->batches++;
  for (uint64_t k = 0; k < b.n; k++) {
    if (b.len[k] == 0 || b.pos[k] + b.len[k] > g->buf[slot].size())
      return *err = "entry outside the buffer", -EINVAL;
    for (uint32_t j = 0; j < b.len[k]; j++) {
      const uint32_t w = g->buf[slot][b.pos[k] + j];
      if (w < g->nv && g->parent[w] < 0) {
        g->parent[w] = b.vertex[k];
        g->next.push_back(w);
      }
    }
  }
  return 0;
}
int HostioEndLevel(HostioGpu *g, uint64_t *ncur, std::string *) {
  g->cur.swap(g->next);
  g->next.clear();
  *ncur = g->cur.size();
  return 0;
}
int HostioParents(HostioGpu *g, int64_t *parent, std::string *) {
  std::copy(g->parent.begin(), g->parent.end(), parent);
  return 0;
}
void CloseHostioGpu(HostioGpu *g) {
  delete g;
}

}  // namespace g500::gpu

namespace g500 {
namespace {

struct Fixture {
  explicit Fixture(uint32_t scale) {
    EXPECT_TRUE(GenerateKronecker({.scale = scale, .seed = 5}, &g).ok());
    path = dir.File("g.g500");
    EXPECT_TRUE(WriteCsr(g, path).ok());
    const Status s = f.Open(path);
    EXPECT_TRUE(s.ok()) << s.msg;
  }
  Csr g;
  ufile::test::TempDir dir;
  std::string path;
  GraphFile f;
};

class Hostio : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Hostio, AgreesWithTheInMemorySearch) {
  Fixture x(GetParam());
  const HostioOptions kOptions[] = {
      {.threads = 3},  // whole lists, merged across 4 KiB gaps, in one buffer a level
      {.threads = 2, .merge_gap_bytes = 0, .buffer_bytes = 256, .index_entries = 3},
      {.threads = 1, .merge_gap_bytes = 64, .buffer_bytes = 4, .index_entries = 1},
  };
  for (const HostioOptions &o : kOptions) {
    SCOPED_TRACE(testing::Message()
                 << "buffer " << o.buffer_bytes << ", index " << o.index_entries);
    gpu::HostioGpu *gpu = nullptr;
    std::string err;
    ASSERT_EQ(gpu::OpenHostioGpu(x.g.nv(), o.buffer_bytes / 4, o.index_entries, &gpu, &err), 0);
    for (uint64_t root : SampleRoots(x.g, 3, GetParam())) {
      std::vector<int64_t> want_parent, p;
      HostBfs(x.g, root, {.threads = 1}, &want_parent);
      FileBfsStats st;
      const Status s = HostioBfs(x.f, gpu, root, o, &p, &st);
      ASSERT_TRUE(s.ok()) << s.msg;
      const Validation v = ValidateBfs(x.g, root, p);
      ASSERT_TRUE(v.ok()) << v.msg;
      EXPECT_EQ(Levels(x.g, root, p), Levels(x.g, root, want_parent));
      EXPECT_GE(st.bytes_read, 8 * v.nedge);  // every list of the component, whole
      EXPECT_GT(st.reads, 0u);
      EXPECT_EQ(st.levels, v.depth + 1);
    }
    if (o.buffer_bytes == 4) {
      EXPECT_GT(gpu->batches, 100u) << "a batch a list entry";
    }
    gpu::CloseHostioGpu(gpu);
  }
}

INSTANTIATE_TEST_SUITE_P(Scales, Hostio, ::testing::Values(8u, 11u));

TEST(Hostio, AFileCutShortIsAnError) {
  Fixture x(10);
  ASSERT_EQ(truncate(x.path.c_str(), static_cast<off_t>(x.g.header().cols_off + 16)), 0);
  gpu::HostioGpu *gpu = nullptr;
  std::string err;
  const HostioOptions o{.threads = 2};
  ASSERT_EQ(gpu::OpenHostioGpu(x.g.nv(), o.buffer_bytes / 4, o.index_entries, &gpu, &err), 0);
  std::vector<int64_t> p;
  FileBfsStats st;
  const Status s = HostioBfs(x.f, gpu, SampleRoots(x.g, 1, 1).at(0), o, &p, &st);
  EXPECT_EQ(s.code, -EIO) << s.msg;
  EXPECT_NE(s.msg.find("shorter than its row offsets"), std::string::npos) << s.msg;
  EXPECT_EQ(HostioBfs(x.f, gpu, x.g.nv(), o, &p, &st).code, -EINVAL);
  gpu::CloseHostioGpu(gpu);
}

}  // namespace
}  // namespace g500
