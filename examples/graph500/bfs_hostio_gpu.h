// SPDX-License-Identifier: Apache-2.0
// The GPU side of the host-driven search (bfs_hostio.cu; the host side is
// bfs_hostio.h). Plain types only, as bfs_gpu.h. The GPU holds the search's
// arrays and, for each host worker, two batch slots: a device buffer for
// neighbour lists (registered with cuFile, so cuFileRead lands there) and
// an index in pinned host memory, an entry a list piece (vertex, first
// buffer entry, length). Expanding a slot copies its index asynchronously
// on the worker's own stream and launches the expansion there, so workers
// never wait for each other's batches.
//
// Every call returns 0 or a negative errno and then sets *err. Open sets
// *out even when it fails: release it with CloseHostioGpu. HostioSlotOf,
// HostioExpand and HostioWait may be called by the workers at once (each
// with its own worker number); the others by one thread, between levels.
#pragma once

#include <cstdint>
#include <string>

namespace g500::gpu {

struct HostioGpu;

struct HostioSlot {
  uint32_t *buf;                 // buffer_entries column entries, device memory
  uint32_t *vertex, *pos, *len;  // index_entries each, pinned host memory
};

// -ENOMEM with the sizes when the arrays and slots do not fit in GPU memory.
int OpenHostioGpu(uint64_t nv, unsigned workers, uint64_t buffer_entries, uint64_t index_entries,
                  HostioGpu **out, std::string *err);
HostioSlot HostioSlotOf(HostioGpu *g, unsigned worker, int slot);
int HostioStart(HostioGpu *g, uint64_t root, std::string *err);
// The current frontier (ncur vertices), sorted, in pinned host memory valid
// until the next level.
int HostioFrontier(HostioGpu *g, uint64_t ncur, const uint32_t **v, std::string *err);
// Expands the slot's first n index entries; returns once they are queued.
int HostioExpand(HostioGpu *g, unsigned worker, int slot, uint64_t n, std::string *err);
// Waits until the slot's last expansion is done with its buffer and index.
int HostioWait(HostioGpu *g, unsigned worker, int slot, std::string *err);
// After a level's last batch: the next frontier's size.
int HostioEndLevel(HostioGpu *g, uint64_t *ncur, std::string *err);
// parent: nv entries, as MemParents'.
int HostioParents(HostioGpu *g, int64_t *parent, std::string *err);
void CloseHostioGpu(HostioGpu *g);

}  // namespace g500::gpu
