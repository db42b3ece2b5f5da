// SPDX-License-Identifier: Apache-2.0
// Status: the outcome of an internal operation, as a value (no exceptions,
// no errno across layers). One of: ok, a system errno, a cuFile status, or a
// CUDA driver error. Every ABI result form is made from it here, in
// status.cpp: a CUfileError_t, cuFileRead/Write's return, a batch event's
// ret, a stream operation's bytes.
#pragma once

#include <cufile.h>

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>

namespace ufile {

class Status {
 public:
  enum class Kind { kOk, kErrno, kOp, kCuda };

  Status() = default;
  static Status Ok() { return {}; }
  static Status Errno(int err) { return Status(Kind::kErrno, err); }
  static Status Op(CUfileOpError op) {
    return op == CU_FILE_SUCCESS ? Status() : Status(Kind::kOp, static_cast<int>(op));
  }
  static Status Cuda(CUresult res) { return Status(Kind::kCuda, static_cast<int>(res)); }

  bool ok() const { return kind_ == Kind::kOk; }
  Kind kind() const { return kind_; }
  int code() const { return code_; }
  bool is_errno(int err) const { return kind_ == Kind::kErrno && code_ == err; }
  bool is_op(CUfileOpError op) const { return kind_ == Kind::kOp && code_ == op; }

  // The ABI's CUfileError_t. An errno maps to its closest cuFile status.
  CUfileError_t ToCuFileError() const;
  // The cuFileRead/Write convention: -1 with errno set, or -CUfileOpError.
  ssize_t ToIoReturn() const;
  // A batch event's ret and a USDT probe's result: -errno for a system error,
  // -CUfileOpError for a cuFile one, -CU_FILE_CUDA_DRIVER_ERROR for CUDA.
  int64_t ToNegativeCode() const;
  // A stream operation's *bytes_p, as NVIDIA documents it: -1 for a system
  // error, else -CUfileOpError. errno is not touched: the caller's thread is
  // long gone.
  ssize_t ToStreamReturn() const;
  // One line for the log: "errno 5 (Input/output error)", ...
  std::string ToString() const;

 private:
  Status(Kind kind, int code) : kind_(kind), code_(code) {}
  Kind kind_ = Kind::kOk;
  int code_ = 0;
};

// A value or the Status that prevented it.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(status) {}     // NOLINT: implicit by design
  bool ok() const { return status_.ok(); }
  const Status &status() const { return status_; }
  T &value() { return value_; }
  const T &value() const { return value_; }
  T *operator->() { return &value_; }
  T &operator*() { return value_; }

 private:
  T value_{};
  Status status_;
};

// Maps an errno to the cuFile status a caller of a CUfileError_t API sees.
CUfileOpError OpErrorFromErrno(int err);

}  // namespace ufile

#define UFILE_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::ufile::Status ufile_status_ = (expr); \
    if (!ufile_status_.ok()) return ufile_status_; \
  } while (0)
