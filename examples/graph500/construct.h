// SPDX-License-Identifier: Apache-2.0
// Graph500's kernel 1: the edge list to compressed sparse rows (csr.h),
// every edge in both rows of its endpoints (a self-loop twice in its row),
// duplicates kept, each row sorted.
//
// No atomics: each worker owns a range of vertices (rows). The edge list
// goes by chunks of 4M edges: each worker sorts the ends of its slice of the
// chunk by owner into a staging area (8 bytes an end: 64 MiB), then places
// the ends it owns, in edge order; a pass counts the degrees, a second fills
// the rows, then each worker sorts its rows. Every edge is read twice a pass
// whatever the number of workers, and the result is the same for any number
// of workers. Memory: the staging area beyond the arrays passed in.
#pragma once

#include <cstdint>
#include <span>

#include "common.h"
#include "kronecker.h"

namespace g500 {

inline constexpr uint64_t kKernelOneChunkEdges = 1ull << 22;

// Builds the rows of the nv vertices from edges into offsets (nv + 1
// entries, all zero on entry) and cols (2 x edges.size() entries) over
// `threads` workers (0: all), chunk_edges edges a chunk. -EINVAL for wrong
// sizes or an endpoint not below nv, or nv above 2^32 (the column indices
// are 32-bit).
Status BuildCsr(std::span<const PackedEdge> edges, uint64_t nv, unsigned threads,
                std::span<uint64_t> offsets, std::span<uint32_t> cols,
                uint64_t chunk_edges = kKernelOneChunkEdges);

}  // namespace g500
