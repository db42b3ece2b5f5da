// SPDX-License-Identifier: Apache-2.0
// Small things every ufile-bench file uses: an error value and a clock.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>

namespace bench {

// Empty error: success. Errors are values; nothing here throws.
struct Status {
  std::string error;
  bool ok() const { return error.empty(); }
};

Status Fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "what: strerror(err)".
Status ErrnoFail(const char *what, int err);

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace bench
