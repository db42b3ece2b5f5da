// SPDX-License-Identifier: Apache-2.0
// GuardedBuffer: page-aligned host memory filled with a known pattern, so a
// test can check after an I/O that no byte outside the request's range
// [off, off + len) changed (the guard bytes), and what the range holds.
// Thread-safety: none (one owner).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace ufile::test {

class GuardedBuffer {
 public:
  GuardedBuffer(size_t size, uint64_t seed) : size_(size), pattern_(RandomBytes(size, seed)) {
    data_ = static_cast<uint8_t *>(std::aligned_alloc(4096, (size + 4095) / 4096 * 4096));
    if (!data_) throw std::bad_alloc();
    Reset();
  }
  ~GuardedBuffer() { std::free(data_); }
  GuardedBuffer(const GuardedBuffer &) = delete;
  GuardedBuffer &operator=(const GuardedBuffer &) = delete;

  uint8_t *data() { return data_; }
  size_t size() const { return size_; }
  const std::vector<uint8_t> &pattern() const { return pattern_; }
  // Back to the pattern (before each I/O).
  void Reset() { std::memcpy(data_, pattern_.data(), size_); }
  // An empty string, or which guard bytes changed around [off, off + len).
  std::string GuardsChanged(size_t off, size_t len) const {
    if (std::memcmp(data_, pattern_.data(), off) != 0) return "bytes before the range changed";
    if (std::memcmp(data_ + off + len, pattern_.data() + off + len, size_ - off - len) != 0)
      return "bytes after the range changed";
    return "";
  }
  bool Unchanged() const { return std::memcmp(data_, pattern_.data(), size_) == 0; }
  bool Holds(size_t off, const uint8_t *want, size_t len) const {
    return std::memcmp(data_ + off, want, len) == 0;
  }

 private:
  size_t size_;
  std::vector<uint8_t> pattern_;
  uint8_t *data_ = nullptr;
};

}  // namespace ufile::test
