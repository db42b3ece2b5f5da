// SPDX-License-Identifier: Apache-2.0
// The host side of the host-driven GPU search (bfs_hostio.cpp) against a
// stand-in for its GPU side in host memory (ufile reads pageable memory
// without a GPU). The stand-in expands a batch only when the host waits for
// its slot or ends the level, as a GPU behind the host would, and fails the
// test if the host touches a slot it has not waited for. Batches of every
// size down to one list entry, requests merged across gaps or not, any
// number of workers and chunk sizes give valid trees with the in-memory
// search's levels; every list of the component is read; a file cut short
// is an error. Also the worker pool the search keeps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>

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
  struct Slot {
    std::vector<uint32_t> buf, vertex, pos, len;
    uint64_t pending = 0;  // index entries queued, not yet expanded
  };
  uint64_t nv = 0, index_entries = 0;
  std::vector<Slot> slots;  // two a worker
  std::mutex mu;            // workers expand at once
  std::vector<int64_t> parent;
  std::vector<uint32_t> cur, next;
  uint64_t batches = 0;
  std::atomic<int> touched_pending{0};  // the host used a slot before waiting for it

  void ExpandLocked(Slot &s) {
    for (uint64_t k = 0; k < s.pending; k++) {
      EXPECT_GT(s.len[k], 0u);
      EXPECT_LE(s.pos[k] + s.len[k], s.buf.size()) << "entry outside the buffer";
      for (uint32_t j = 0; j < s.len[k]; j++) {
        const uint32_t w = s.buf[s.pos[k] + j];
        if (w < nv && parent[w] < 0) {
          parent[w] = s.vertex[k];
          next.push_back(w);
        }
      }
    }
    s.pending = 0;
    std::fill(s.buf.begin(), s.buf.end(), 0xdeadbeefu);  // what a reused buffer held
  }
};

int OpenHostioGpu(uint64_t nv, unsigned workers, uint64_t buffer_entries, uint64_t index_entries,
                  HostioGpu **out, std::string *err) {
  auto *g = new HostioGpu;
  *out = g;
  if (workers == 0 || buffer_entries == 0 || index_entries == 0) return *err = "bad sizes", -EINVAL;
  g->nv = nv;
  g->index_entries = index_entries;
  g->slots.resize(2 * workers);
  for (auto &s : g->slots) {
    s.buf.assign(buffer_entries, 0xdeadbeefu);
    s.vertex.resize(index_entries), s.pos.resize(index_entries), s.len.resize(index_entries);
  }
  return 0;
}
HostioSlot HostioSlotOf(HostioGpu *g, unsigned worker, int slot) {
  std::lock_guard<std::mutex> lock(g->mu);
  auto &s = g->slots.at(2 * worker + slot);
  if (s.pending > 0) g->touched_pending++;
  return {s.buf.data(), s.vertex.data(), s.pos.data(), s.len.data()};
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
int HostioExpand(HostioGpu *g, unsigned worker, int slot, uint64_t n, std::string *err) {
  std::lock_guard<std::mutex> lock(g->mu);
  if (n > g->index_entries) return *err = "batch larger than its index", -EINVAL;
  auto &s = g->slots.at(2 * worker + slot);
  if (s.pending > 0) g->touched_pending++;
  s.pending = n;
  g->batches++;
  return 0;
}
int HostioWait(HostioGpu *g, unsigned worker, int slot, std::string *) {
  std::lock_guard<std::mutex> lock(g->mu);
  g->ExpandLocked(g->slots.at(2 * worker + slot));
  return 0;
}
int HostioEndLevel(HostioGpu *g, uint64_t *ncur, std::string *) {
  for (auto &s : g->slots) g->ExpandLocked(s);
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

// The search over the stand-in; the tree in *parent.
Status Search(const Fixture &x, const HostioOptions &o, gpu::HostioGpu *gpu, uint64_t root,
              std::vector<int64_t> *parent, FileBfsStats *st) {
  HostDrivenBfs bfs(x.f, gpu, o);
  const Status s = bfs.Run(root, st);
  parent->assign(x.g.nv(), -2);
  std::string err;
  if (s.ok()) {
    EXPECT_EQ(gpu::HostioParents(gpu, parent->data(), &err), 0);
  }
  return s;
}

class Hostio : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Hostio, AgreesWithTheInMemorySearch) {
  Fixture x(GetParam());
  const HostioOptions kOptions[] = {
      {.threads = 3},  // whole lists, merged across 32 KiB gaps
      {.threads = 2,
       .merge_gap_bytes = 0,
       .buffer_bytes = 256,
       .index_entries = 3,
       .chunk_vertices = 5},
      {.threads = 1,
       .merge_gap_bytes = 64,
       .buffer_bytes = 4,
       .index_entries = 1,
       .chunk_vertices = 1},
      {.threads = 4,
       .merge_gap_bytes = 4096,
       .buffer_bytes = 64,
       .index_entries = 8,
       .chunk_vertices = 2},
  };
  for (const HostioOptions &o : kOptions) {
    SCOPED_TRACE(testing::Message()
                 << "workers " << o.threads << ", buffer " << o.buffer_bytes << ", index "
                 << o.index_entries << ", chunk " << o.chunk_vertices);
    gpu::HostioGpu *gpu = nullptr;
    std::string err;
    ASSERT_EQ(gpu::OpenHostioGpu(x.g.nv(), HostDrivenBfs::Workers(o), o.buffer_bytes / 4,
                                 o.index_entries, &gpu, &err),
              0);
    for (uint64_t root : SampleRoots(x.g, 3, GetParam())) {
      std::vector<int64_t> want_parent, p;
      HostBfs(x.g, root, {.threads = 1}, &want_parent);
      FileBfsStats st;
      const Status s = Search(x, o, gpu, root, &p, &st);
      ASSERT_TRUE(s.ok()) << s.msg;
      const Validation v = ValidateBfs(x.g, root, p);
      ASSERT_TRUE(v.ok()) << v.msg;
      EXPECT_EQ(Levels(x.g, root, p), Levels(x.g, root, want_parent));
      EXPECT_GE(st.bytes_read, 8 * v.nedge);  // every list of the component, whole
      EXPECT_GT(st.reads, 0u);
      EXPECT_EQ(st.levels, v.depth + 1);
    }
    EXPECT_EQ(gpu->touched_pending.load(), 0) << "a slot used before its expansion ended";
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
  ASSERT_EQ(gpu::OpenHostioGpu(x.g.nv(), 2, o.buffer_bytes / 4, o.index_entries, &gpu, &err), 0);
  std::vector<int64_t> p;
  FileBfsStats st;
  const Status s = Search(x, o, gpu, SampleRoots(x.g, 1, 1).at(0), &p, &st);
  EXPECT_EQ(s.code, -EIO) << s.msg;
  EXPECT_NE(s.msg.find("shorter than its row offsets"), std::string::npos) << s.msg;
  EXPECT_EQ(Search(x, o, gpu, x.g.nv(), &p, &st).code, -EINVAL);
  EXPECT_EQ(Search(x, {.threads = 2, .chunk_vertices = 0}, gpu, 0, &p, &st).code, -EINVAL);
  gpu::CloseHostioGpu(gpu);
}

TEST(WorkerPool, RunsEveryWorkerEachTime) {
  for (unsigned n : {1u, 3u, 8u}) {
    WorkerPool pool(n);
    ASSERT_EQ(pool.size(), n);
    std::vector<std::atomic<int>> calls(n);
    for (int round = 0; round < 200; round++)
      pool.Run([&](unsigned w) { calls.at(w).fetch_add(1); });
    for (unsigned w = 0; w < n; w++) EXPECT_EQ(calls[w].load(), 200) << "worker " << w;
  }
}

}  // namespace
}  // namespace g500
