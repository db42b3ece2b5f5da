// SPDX-License-Identifier: Apache-2.0
// Shared by the C entry points: every one is noexcept, converts a Status to
// the ABI's conventions in one place, and turns any escaping exception into
// CU_FILE_INTERNAL_ERROR with a log line.
#pragma once

#include <cufile.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>

#include "base/log.h"
#include "base/raw_enum.h"
#include "base/status.h"
#include "core/driver.h"

namespace ufile::api {

using ufile::RawEnum;
template <class E>
bool InEnum(const E &e, int last) {
  const int v = RawEnum(e);
  return v >= 0 && v <= last;
}

inline CUfileError_t Ok() { return {CU_FILE_SUCCESS, CUDA_SUCCESS}; }
inline CUfileError_t Err(CUfileOpError op) { return {op, CUDA_SUCCESS}; }

// Logs a refused argument (at the caller's source line) and returns op.
__attribute__((format(printf, 4, 5))) inline CUfileError_t RefuseAt(const char *file, int line,
                                                                    CUfileOpError op,
                                                                    const char *fmt, ...) {
  if (LogEnabled(LogLevel::kError)) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    LogMessage(LogLevel::kError, file, line, "%s", msg);
  }
  return Err(op);
}

#define UFILE_API_REFUSE(fn, op, ...) \
  ::ufile::api::RefuseAt(__FILE__, __LINE__, op, fn ": " __VA_ARGS__)

// Depth of cuFile calls on this thread (a callback of a user-space
// filesystem runs inside one).
inline thread_local int t_call_depth = 0;
struct CallDepth {
  CallDepth() { ++t_call_depth; }
  ~CallDepth() { --t_call_depth; }
};

// Runs body with exceptions contained: one escaping is logged and the call
// returns on_exception.
template <class R, class Body>
R Contain(const char *fn, R on_exception, Body &&body) noexcept {
  CallDepth depth;
  try {
    return body();
  } catch (const std::exception &e) {
    UFILE_LOG_ERROR("%s: internal error: %s", fn, e.what());
  } catch (...) {
    UFILE_LOG_ERROR("%s: internal error", fn);
  }
  return on_exception;
}

// For the calls returning CUfileError_t.
template <class Body>
CUfileError_t Guard(const char *fn, Body &&body) noexcept {
  return Contain(fn, Err(CU_FILE_INTERNAL_ERROR), body);
}

// For cuFileRead/Write (ssize_t).
template <class Body>
ssize_t GuardIo(const char *fn, Body &&body) noexcept {
  return Contain(fn, -static_cast<ssize_t>(CU_FILE_INTERNAL_ERROR), body);
}

}  // namespace ufile::api
