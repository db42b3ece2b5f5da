// SPDX-License-Identifier: Apache-2.0
// Breadth-first search on the CPU. Both searches write parent[v] (the root's
// is itself, an unreached vertex's -1) and are level-synchronous: each level
// expands the frontier with `threads` threads, which claim vertices with a
// compare-and-swap on the parent.
//
// HostBfs reads the graph in memory (a Csr: vectors or the mapped file,
// that is the page cache). Direction-optimizing (Beamer et al.), it scans
// the unreached vertices for a parent in the frontier (bottom-up) while the
// frontier is large, and keeps that frontier as a byte a vertex. FileBfs keeps only the row offsets
// in memory and reads each frontier vertex's neighbour list from the file with cuFileRead into host
// buffers; it is the host-driven search over the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "csr.h"

namespace g500 {

struct HostBfsOptions {
  unsigned threads = 0;               // 0: every hardware thread
  bool direction_optimizing = false;  // bottom-up levels while the frontier is large
};

struct HostBfsLevels {
  uint32_t top_down = 0, bottom_up = 0;
  uint64_t edges_examined = 0;  // column entries read: bottom-up stops at a parent
};

// parent is resized to nv. Neighbours outside [0, nv) are skipped. Returns
// the levels searched each way.
HostBfsLevels HostBfs(const Csr &g, uint64_t root, const HostBfsOptions &o,
                      std::vector<int64_t> *parent);

// Vertices of a frontier, split among threads, then gathered.
class Frontier {
 public:
  explicit Frontier(unsigned threads) : local_(threads) {}
  std::vector<uint32_t> &Local(unsigned t) { return local_[t]; }
  // Moves the threads' vectors into `out`; sorted, so that reads of their
  // lists go in file order.
  void Gather(std::vector<uint32_t> *out, bool sorted);

 private:
  std::vector<std::vector<uint32_t>> local_;
};

// Claims u for parent p: true if u was unreached.
bool Claim(std::vector<int64_t> &parent, uint32_t u, uint32_t p);

}  // namespace g500
