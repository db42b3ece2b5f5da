// SPDX-License-Identifier: Apache-2.0
// Graph500's kernel 1: the edge list to compressed sparse rows (csr.h),
// every edge in both rows of its endpoints (a self-loop twice in its row),
// duplicates kept, each row sorted.
//
// No atomics: each of the workers owns a range of vertices (a row range) and
// reads the whole edge list, counting and then placing only the endpoints
// it owns. The workers go through the list block by block together, so a
// block is read from memory once and shared through the cache; a row is
// filled by one worker in edge order, then sorted, so the result is the same
// for any number of workers. Memory: none beyond the arrays passed in.
#pragma once

#include <cstdint>
#include <span>

#include "common.h"
#include "kronecker.h"

namespace g500 {

// Builds the rows of the nv vertices from edges into offsets (nv + 1
// entries, all zero on entry) and cols (2 x edges.size() entries) over
// `threads` workers (0: all). -EINVAL for wrong sizes or an endpoint not
// below nv, or nv above 2^32 (the column indices are 32-bit).
Status BuildCsr(std::span<const PackedEdge> edges, uint64_t nv, unsigned threads,
                std::span<uint64_t> offsets, std::span<uint32_t> cols);

}  // namespace g500
