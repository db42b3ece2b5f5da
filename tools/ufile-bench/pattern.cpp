// SPDX-License-Identifier: Apache-2.0
#include "pattern.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace bench {
namespace {

constexpr size_t kBlock = 4096;
constexpr size_t kWords = kBlock / 8;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// wyrand: one 64x64->128 multiply a word, several GB/s a core.
struct WyRand {
  uint64_t s;
  uint64_t Next() {
    s += 0xa0761d6478bd642full;
    __uint128_t m = static_cast<__uint128_t>(s) * (s ^ 0xe7037ed1a0b428dbull);
    return static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
  }
};

WyRand BlockRng(uint64_t block) {
  return WyRand{SplitMix(block ^ 0x75666c6562656e63ull)};
}

void GenerateBlock(uint64_t block, unsigned char *out) {
  WyRand r = BlockRng(block);
  for (size_t i = 0; i < kWords; ++i) {
    uint64_t w = r.Next();
    std::memcpy(out + 8 * i, &w, 8);
  }
}

// Whether a whole block at dst matches, without a temporary copy.
bool BlockMatches(uint64_t block, const unsigned char *src) {
  WyRand r = BlockRng(block);
  uint64_t diff = 0;
  for (size_t i = 0; i < kWords; ++i) {
    uint64_t w = 0;
    std::memcpy(&w, src + 8 * i, 8);
    diff |= w ^ r.Next();
  }
  return diff == 0;
}

size_t FirstDifference(const unsigned char *a, const unsigned char *b, size_t n) {
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

void FillPattern(uint64_t off, void *dst, size_t len) {
  auto *out = static_cast<unsigned char *>(dst);
  unsigned char tmp[kBlock];
  while (len > 0) {
    uint64_t block = off / kBlock;
    size_t in = off % kBlock;
    size_t n = kBlock - in < len ? kBlock - in : len;
    if (n == kBlock) {
      GenerateBlock(block, out);
    } else {
      GenerateBlock(block, tmp);
      std::memcpy(out, tmp + in, n);
    }
    out += n;
    off += n;
    len -= n;
  }
}

bool CheckPattern(uint64_t off, const void *src, size_t len, uint64_t *bad_off) {
  const auto *in_p = static_cast<const unsigned char *>(src);
  unsigned char tmp[kBlock];
  while (len > 0) {
    uint64_t block = off / kBlock;
    size_t in = off % kBlock;
    size_t n = kBlock - in < len ? kBlock - in : len;
    if (n != kBlock || !BlockMatches(block, in_p)) {
      GenerateBlock(block, tmp);
      size_t at = FirstDifference(tmp + in, in_p, n);
      if (at < n) {
        if (bad_off) *bad_off = off + at;
        return false;
      }
    }
    in_p += n;
    off += n;
    len -= n;
  }
  return true;
}

std::string DescribeMismatch(uint64_t off, const void *src, size_t len) {
  const auto *in_p = static_cast<const unsigned char *>(src);
  std::vector<unsigned char> want(len);
  FillPattern(off, want.data(), len);
  size_t wrong = 0, first = len, last = 0;
  for (size_t i = 0; i < len; ++i) {
    if (in_p[i] == want[i]) continue;
    ++wrong;
    first = std::min(first, i);
    last = i;
  }
  if (wrong == 0) return "no byte differs";
  std::string s = std::to_string(wrong) + " of " + std::to_string(len) + " bytes differ in [" +
                  std::to_string(off + first) + ", " + std::to_string(off + last + 1) +
                  "); there: found";
  char hex[4];
  const size_t shown = std::min<size_t>(8, len - first);
  for (size_t i = 0; i < shown; ++i) {
    std::snprintf(hex, sizeof hex, " %02x", in_p[first + i]);
    s += hex;
  }
  s += ", want";
  for (size_t i = 0; i < shown; ++i) {
    std::snprintf(hex, sizeof hex, " %02x", want[first + i]);
    s += hex;
  }
  return s;
}

}  // namespace bench
