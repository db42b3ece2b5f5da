// SPDX-License-Identifier: Apache-2.0
// The cuFile functions a row calls: ufile's own, linked in (in-process), or
// those of a libcufile.so loaded with dlopen(RTLD_LOCAL) and resolved with
// dlsym on that handle only, so NVIDIA's library and ours never share a
// symbol. Thread-safety: a CuFileFns is read-only once loaded.
#pragma once

#include <cufile.h>

#include <string>

#include "common.h"

namespace bench {

#define BENCH_CUFILE_FUNCTIONS(X) \
  X(cuFileDriverOpen)             \
  X(cuFileHandleRegister)         \
  X(cuFileHandleDeregister)       \
  X(cuFileBufRegister)            \
  X(cuFileBufDeregister)          \
  X(cuFileRead)                   \
  X(cuFileWrite)                  \
  X(cuFileBatchIOSetUp)           \
  X(cuFileBatchIOSubmit)          \
  X(cuFileBatchIOGetStatus)       \
  X(cuFileBatchIOCancel)          \
  X(cuFileBatchIODestroy)         \
  X(cuFileReadAsync)              \
  X(cuFileWriteAsync)             \
  X(cuFileStreamRegister)         \
  X(cuFileStreamDeregister)

struct CuFileFns {
#define BENCH_CUFILE_MEMBER(name) decltype(&::name) name = nullptr;
  BENCH_CUFILE_FUNCTIONS(BENCH_CUFILE_MEMBER)
#undef BENCH_CUFILE_MEMBER
  // cufile.h renames cuFileDriverClose to cuFileDriverClose_v2 (a macro):
  // kept out of the list so that its symbol name is spelled out.
  CUfileError_t (*driver_close)() = nullptr;
  std::string origin;  // "ufile (in-process)" or the library's path
};

// ufile's functions, linked into this program.
const CuFileFns &LinkedCuFile();

// The functions of the library at path, loaded once per path and kept
// loaded. Every function above must resolve except the batch and stream
// ones (left null when absent).
Status LoadCuFile(const std::string &path, const CuFileFns **out);

// "CU_FILE_... (text)" for a status; adds the CUDA error when there is one.
std::string CuFileError(CUfileError_t err);
// Describes a negative cuFileRead/Write return (-1 + errno, or -CUfileOpError).
std::string CuFileIoError(ssize_t ret, int err);

}  // namespace bench
