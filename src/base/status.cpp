// SPDX-License-Identifier: Apache-2.0
#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace ufile {

CUfileOpError OpErrorFromErrno(int err) {
  switch (err) {
    case EINVAL:
    case EFAULT:
    case ERANGE:
    case EOVERFLOW:
      return CU_FILE_INVALID_VALUE;
    case EBADF:
      return CU_FILE_INVALID_FILE_OPEN_FLAG;
    case EACCES:
    case EPERM:
    case EROFS:
      return CU_FILE_PERMISSION_DENIED;
    case ENOMEM:
      return CU_FILE_NOMEM_ERROR;
    case EMFILE:
    case ENFILE:
      return CU_FILE_GETNEWFD_FAILED;
    case ENOTSUP:
      return CU_FILE_IO_NOT_SUPPORTED;
    default:
      return CU_FILE_IO_ERROR;
  }
}

CUfileError_t Status::ToCuFileError() const {
  switch (kind_) {
    case Kind::kOk:
      return {CU_FILE_SUCCESS, CUDA_SUCCESS};
    case Kind::kErrno:
      return {OpErrorFromErrno(code_), CUDA_SUCCESS};
    case Kind::kOp:
      return {static_cast<CUfileOpError>(code_), CUDA_SUCCESS};
    case Kind::kCuda:
      return {CU_FILE_CUDA_DRIVER_ERROR, static_cast<CUresult>(code_)};
  }
  return {CU_FILE_INTERNAL_ERROR, CUDA_SUCCESS};
}

ssize_t Status::ToIoReturn() const {
  if (kind_ == Kind::kErrno) errno = code_;
  return ToStreamReturn();  // -1 for the errno, else the same code
}

int64_t Status::ToNegativeCode() const {
  switch (kind_) {
    case Kind::kOk:
      return 0;
    case Kind::kErrno:
    case Kind::kOp:
      return -static_cast<int64_t>(code_);
    case Kind::kCuda:
      return -static_cast<int64_t>(CU_FILE_CUDA_DRIVER_ERROR);
  }
  return -static_cast<int64_t>(CU_FILE_INTERNAL_ERROR);
}

ssize_t Status::ToStreamReturn() const {
  switch (kind_) {
    case Kind::kOk:
      return 0;
    case Kind::kErrno:
      return -1;
    case Kind::kOp:
      return -static_cast<ssize_t>(code_);
    case Kind::kCuda:
      return -static_cast<ssize_t>(CU_FILE_CUDA_DRIVER_ERROR);
  }
  return -static_cast<ssize_t>(CU_FILE_INTERNAL_ERROR);
}

std::string Status::ToString() const {
  switch (kind_) {
    case Kind::kOk:
      return "ok";
    case Kind::kErrno:
      return "errno " + std::to_string(code_) + " (" + std::strerror(code_) + ")";
    case Kind::kOp:
      return "cufile " + std::to_string(code_) + " (" +
             cufileop_status_error(static_cast<CUfileOpError>(code_)) + ")";
    case Kind::kCuda:
      return "CUDA driver error " + std::to_string(code_);
  }
  return "?";
}

}  // namespace ufile
