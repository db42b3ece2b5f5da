// SPDX-License-Identifier: Apache-2.0
// Small things every ufile-bench file uses: an error value and a clock.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>

#include "ufile/detail/device_atomics.h"

namespace bench {

// Empty error: success. Errors are values; nothing here throws.
struct Status {
  std::string error;
  bool ok() const { return error.empty(); }
};

Status Fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "what: strerror(err)".
Status ErrnoFail(const char *what, int err);

// CLOCK_MONOTONIC nanoseconds: the library's one clock (the device's
// %globaltimer in kernels).
using ufile::devio::NowNs;

}  // namespace bench
