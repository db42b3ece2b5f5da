// SPDX-License-Identifier: Apache-2.0
#include "plan/planner.h"

#include <algorithm>

namespace ufile {
namespace {
size_t CeilDiv(size_t a, size_t b) { return (a + b - 1) / b; }
}  // namespace

Plan::Plan(const PlanInput &in) : in_(in) {
  if (in_.chunk_size == 0) in_.chunk_size = 1 << 20;
  if (in_.size == 0) return;
  if (!in_.fd_direct) {
    head_len_ = in_.size;  // all buffered, chunked like the head
  } else {
    const uint64_t a = in_.align;
    const uint64_t start = static_cast<uint64_t>(in_.file_off);
    const uint64_t end = start + in_.size;
    const uint64_t mid_start = std::min(end, (start + a - 1) / a * a);
    const uint64_t mid_end = std::max(mid_start, end / a * a);
    head_len_ = mid_start - start;
    middle_len_ = mid_end - mid_start;
    tail_len_ = end - mid_end;
    const uintptr_t mem_mid = in_.mem_addr + head_len_;
    middle_staged_ = in_.needs_copy || (mem_mid % a) != 0;
  }
  head_chunks_ = CeilDiv(head_len_, in_.chunk_size);
  middle_chunks_ = CeilDiv(middle_len_, in_.chunk_size);
  tail_chunks_ = CeilDiv(tail_len_, in_.chunk_size);
}

Chunk Plan::at(size_t i) const {
  Chunk c;
  size_t region_off = 0, region_len = 0, k = i;
  if (k < head_chunks_) {
    region_off = 0;
    region_len = head_len_;
    c.direct = false;
    c.staged = in_.needs_copy;
  } else if ((k -= head_chunks_) < middle_chunks_) {
    region_off = head_len_;
    region_len = middle_len_;
    c.direct = true;
    c.staged = middle_staged_;
    c.cache_first = in_.cache_first;
    c.hot = in_.hot;
  } else {
    k -= middle_chunks_;
    region_off = head_len_ + middle_len_;
    region_len = tail_len_;
    c.direct = false;
    c.staged = in_.needs_copy;
  }
  const size_t off_in_region = k * in_.chunk_size;
  c.buf_off = region_off + off_in_region;
  c.len = std::min(in_.chunk_size, region_len - off_in_region);
  c.file_off = in_.file_off + static_cast<off_t>(c.buf_off);
  return c;
}

}  // namespace ufile
