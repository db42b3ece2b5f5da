// SPDX-License-Identifier: Apache-2.0
// The GPU side of the host-driven search (bfs_hostio.cu; the host side is
// bfs_hostio.h). Plain types only, as bfs_gpu.h. The GPU holds the search's
// arrays and two buffers for neighbour lists: per level it sorts the
// frontier and hands it to the host; the host reads lists into a buffer with
// cuFileRead and asks the GPU to expand that batch, whose entries name a
// vertex and where its list (or a piece of it) lies in the buffer.
//
// Every call returns 0 or a negative errno and then sets *err. Open sets
// *out even when it fails: release it with CloseHostioGpu. Not for two
// threads at once.
#pragma once

#include <cstdint>
#include <string>

namespace g500::gpu {

struct HostioGpu;

// A batch in a buffer: n entries of (vertex, first buffer entry, length).
struct HostioBatch {
  const uint32_t *vertex;
  const uint64_t *pos;
  const uint32_t *len;
  uint64_t n;
};

// buffer_entries: column indices a buffer holds; index_entries: the most
// entries of a batch. -ENOMEM with the sizes when they do not fit.
int OpenHostioGpu(uint64_t nv, uint64_t buffer_entries, uint64_t index_entries, HostioGpu **out,
                  std::string *err);
uint32_t *HostioBuffer(HostioGpu *g, int slot);  // device memory, registered with cuFile
int HostioStart(HostioGpu *g, uint64_t root, std::string *err);
// The current frontier (ncur vertices), sorted, in pinned host memory valid
// until the next call.
int HostioFrontier(HostioGpu *g, uint64_t ncur, const uint32_t **v, std::string *err);
// Waits until the last batch expanded from slot's buffer is done with it.
int HostioWait(HostioGpu *g, int slot, std::string *err);
int HostioExpand(HostioGpu *g, int slot, const HostioBatch &b, std::string *err);
// After a level's last batch: the next frontier's size.
int HostioEndLevel(HostioGpu *g, uint64_t *ncur, std::string *err);
// parent: nv entries, as BfsInMemory's.
int HostioParents(HostioGpu *g, int64_t *parent, std::string *err);
void CloseHostioGpu(HostioGpu *g);

}  // namespace g500::gpu
