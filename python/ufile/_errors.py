# SPDX-License-Identifier: Apache-2.0
"""Exceptions: every failed call names the cuFile status (or errno) and the path."""
from __future__ import annotations

import errno as _errno
import os

CUFILEOP_BASE_ERR = 5000

# CUfileOpError values of include/cufile.h (the C ABI); the names are the ABI's.
# tests/python/test_file_cpu.py compares this table with the header.
_OP_NAMES = {
    0: "CU_FILE_SUCCESS", 5001: "CU_FILE_DRIVER_NOT_INITIALIZED",
    5002: "CU_FILE_DRIVER_INVALID_PROPS", 5003: "CU_FILE_DRIVER_UNSUPPORTED_LIMIT",
    5004: "CU_FILE_DRIVER_VERSION_MISMATCH", 5005: "CU_FILE_DRIVER_VERSION_READ_ERROR",
    5006: "CU_FILE_DRIVER_CLOSING", 5007: "CU_FILE_PLATFORM_NOT_SUPPORTED",
    5008: "CU_FILE_IO_NOT_SUPPORTED", 5009: "CU_FILE_DEVICE_NOT_SUPPORTED",
    5010: "CU_FILE_NVFS_DRIVER_ERROR", 5011: "CU_FILE_CUDA_DRIVER_ERROR",
    5012: "CU_FILE_CUDA_POINTER_INVALID", 5013: "CU_FILE_CUDA_MEMORY_TYPE_INVALID",
    5014: "CU_FILE_CUDA_POINTER_RANGE_ERROR", 5015: "CU_FILE_CUDA_CONTEXT_MISMATCH",
    5016: "CU_FILE_INVALID_MAPPING_SIZE", 5017: "CU_FILE_INVALID_MAPPING_RANGE",
    5018: "CU_FILE_INVALID_FILE_TYPE", 5019: "CU_FILE_INVALID_FILE_OPEN_FLAG",
    5020: "CU_FILE_DIO_NOT_SET", 5022: "CU_FILE_INVALID_VALUE",
    5023: "CU_FILE_MEMORY_ALREADY_REGISTERED", 5024: "CU_FILE_MEMORY_NOT_REGISTERED",
    5025: "CU_FILE_PERMISSION_DENIED", 5026: "CU_FILE_DRIVER_ALREADY_OPEN",
    5027: "CU_FILE_HANDLE_NOT_REGISTERED", 5028: "CU_FILE_HANDLE_ALREADY_REGISTERED",
    5029: "CU_FILE_DEVICE_NOT_FOUND", 5030: "CU_FILE_INTERNAL_ERROR",
    5031: "CU_FILE_GETNEWFD_FAILED", 5033: "CU_FILE_NVFS_SETUP_ERROR",
    5034: "CU_FILE_IO_DISABLED", 5035: "CU_FILE_BATCH_SUBMIT_FAILED",
    5036: "CU_FILE_GPU_MEMORY_PINNING_FAILED", 5037: "CU_FILE_BATCH_FULL",
    5038: "CU_FILE_ASYNC_NOT_SUPPORTED", 5039: "CU_FILE_INTERNAL_BATCH_SETUP_ERROR",
    5040: "CU_FILE_INTERNAL_BATCH_SUBMIT_ERROR", 5041: "CU_FILE_INTERNAL_BATCH_GETSTATUS_ERROR",
    5042: "CU_FILE_INTERNAL_BATCH_CANCEL_ERROR", 5043: "CU_FILE_NOMEM_ERROR",
    5044: "CU_FILE_IO_ERROR", 5045: "CU_FILE_INTERNAL_BUF_REGISTER_ERROR",
    5046: "CU_FILE_HASH_OPR_ERROR", 5047: "CU_FILE_INVALID_CONTEXT_ERROR",
    5048: "CU_FILE_NVFS_INTERNAL_DRIVER_ERROR", 5049: "CU_FILE_BATCH_NOCOMPAT_ERROR",
    5050: "CU_FILE_IO_MAX_ERROR",
}


def op_name(code: int) -> str:
    """The CUfileOpError enumerator name of a status code (sign ignored)."""
    return _OP_NAMES.get(abs(code), f"CU_FILE_UNKNOWN_{abs(code)}")


class CuFileError(OSError):
    """A cuFile call failed.

    ``name`` is the CUfileOpError name (``CU_FILE_INVALID_VALUE``) or, for a
    system error, the errno name (``EBADF``); ``code`` the status (cuFile) or
    errno value; ``path`` the file involved (``filename`` as for OSError)."""

    def __init__(self, call: str, name: str, code: int, path: str | None,
                 sys_errno: int | None = None):
        self.call = call
        self.name = name
        self.code = code
        self.path = path
        text = os.strerror(sys_errno) if sys_errno else name
        msg = f"{call} failed: {name}" + (f" ({text})" if sys_errno else "")
        if sys_errno:
            super().__init__(sys_errno, msg, path)
        else:
            super().__init__(msg if path is None else f"{msg}: {path}")
            self.filename = path

    def __str__(self) -> str:
        return self.args[-1] if self.errno is None else f"{self.strerror}: {self.path!r}"


def from_status(call: str, status: int, path: str | None) -> CuFileError:
    """The exception for a CUfileError_t's err field."""
    return CuFileError(call, op_name(status), status, path)


def from_io_result(call: str, ret: int, err: int, path: str | None) -> CuFileError:
    """The exception for a negative cuFileRead/cuFileWrite result."""
    if ret == -1:
        return CuFileError(call, _errno.errorcode.get(err, f"errno {err}"), err, path, err)
    return from_status(call, -ret, path)
