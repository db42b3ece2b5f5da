// SPDX-License-Identifier: Apache-2.0
// Splits one request into chunks. Chunk i is computed on demand (no
// allocation), so participants claim chunks by index.
//
// On a descriptor without O_DIRECT every chunk is buffered. With O_DIRECT the
// request becomes: an unaligned head (buffered), aligned middle chunks
// (O_DIRECT), an unaligned tail (buffered). Buffered edges go through the
// page cache, where the kernel merges them with the rest of their block
// atomically: this is ufile's read-modify-write for unaligned O_DIRECT
// writes, exact to the byte at end of file and safe against other writers of
// the same block. A middle chunk whose host address is not aligned, or whose
// memory needs a copy engine, is staged through an aligned pinned buffer (a
// host read stages only what the page cache lacks: core/transfer.cpp).
// Thread-safety: immutable after construction.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ufile {

struct Chunk {
  off_t file_off = 0;
  size_t len = 0;
  size_t buf_off = 0;   // from the start of the request's memory
  bool direct = false;  // through the O_DIRECT descriptor
  bool staged = false;  // through a staging buffer
  // A direct read chunk tries the page cache first (core/chunk_io.h); hot:
  // the request was found resident, so it skips the per-chunk probe.
  bool cache_first = false;
  bool hot = false;
};

struct PlanInput {
  size_t size = 0;
  off_t file_off = 0;
  bool fd_direct = false;       // the descriptor has O_DIRECT
  size_t align = 4096;          // O_DIRECT alignment of offset, size and memory
  bool needs_copy = false;      // memory is not CPU-writable (device, managed)
  uintptr_t mem_addr = 0;       // request memory start (host memory alignment)
  size_t chunk_size = 1 << 20;  // largest chunk; a multiple of align
  bool cache_first = false;     // direct chunks try the page cache first
  bool hot = false;             // ... and skip the probe (Chunk::hot)
};

class Plan {
 public:
  explicit Plan(const PlanInput &in);
  size_t count() const { return head_chunks_ + middle_chunks_ + tail_chunks_; }
  Chunk at(size_t i) const;
  // Byte offset within the request where chunk i starts.
  size_t start_of(size_t i) const { return at(i).buf_off; }

 private:
  PlanInput in_;
  size_t head_len_ = 0;    // buffered bytes before the aligned middle
  size_t middle_len_ = 0;  // aligned O_DIRECT bytes
  size_t tail_len_ = 0;    // buffered bytes after it
  size_t head_chunks_ = 0, middle_chunks_ = 0, tail_chunks_ = 0;
  bool middle_staged_ = false;
};

}  // namespace ufile
