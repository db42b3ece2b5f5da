// SPDX-License-Identifier: Apache-2.0
// Reads a fuzz input as a stream of small decisions. Past the end every read
// gives 0, so any input decodes to a complete, finite sequence.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ufile::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t *data, size_t size) : p_(data), left_(size) {}
  bool empty() const { return left_ == 0; }
  uint8_t U8() {
    if (left_ == 0) return 0;
    --left_;
    return *p_++;
  }
  uint16_t U16() { return static_cast<uint16_t>(U8() | (U8() << 8)); }
  uint32_t U32() { return U16() | (static_cast<uint32_t>(U16()) << 16); }
  // A value in [0, n), n > 0.
  size_t Below(size_t n) { return n <= 256 ? U8() % n : (n <= 65536 ? U16() % n : U32() % n); }
  // One of the given values.
  template <class T, size_t N>
  T Pick(const T (&values)[N]) {
    return values[Below(N)];
  }

 private:
  const uint8_t *p_;
  size_t left_;
};

}  // namespace ufile::fuzz
