// SPDX-License-Identifier: Apache-2.0
// Command-line helpers of the Graph500 tools: strict number parsing, timers.
#pragma once

#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace g500 {

// The whole of s as a decimal number in [lo, hi], or false.
inline bool ParseU64(const std::string &s, uint64_t lo, uint64_t hi, uint64_t *out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char *end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// s as a byte count: decimal digits with an optional suffix k, M, G or T
// (powers of 1024), at least lo; false otherwise.
inline bool ParseBytes(const std::string &s, uint64_t lo, uint64_t *out) {
  static const std::string kSuffix = "kMGT";
  std::string digits = s;
  unsigned shift = 0;
  const size_t at = s.empty() ? std::string::npos : kSuffix.find(s.back());
  if (at != std::string::npos) {
    digits.pop_back();
    shift = 10 * static_cast<unsigned>(at + 1);
  }
  uint64_t v = 0;
  if (!ParseU64(digits, 0, UINT64_MAX >> shift, &v) || (v << shift) < lo) return false;
  *out = v << shift;
  return true;
}

inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds used by the process so far (user + system, every thread).
inline double CpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval &t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

}  // namespace g500
