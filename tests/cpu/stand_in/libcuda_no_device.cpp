// SPDX-License-Identifier: Apache-2.0
// A stand-in libcuda.so.1 that behaves as NVIDIA's does on a machine whose
// GPUs are hidden (CUDA_VISIBLE_DEVICES=): every entry resolves and cuInit
// returns CUDA_ERROR_NO_DEVICE. cuGetErrorString names it; any other entry,
// which nothing may call once cuInit has failed, aborts the process.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

CUresult InitNoDevice(unsigned int) {
  return CUDA_ERROR_NO_DEVICE;
}

CUresult ErrorString(CUresult error, const char **text) {
  *text = error == CUDA_ERROR_NO_DEVICE ? "stand-in: no CUDA-capable device is detected"
                                        : "stand-in: other error";
  return CUDA_SUCCESS;
}

void CalledAfterFailedInit() {
  std::fprintf(stderr,
               "stand-in libcuda: an entry other than cuInit and cuGetErrorString was "
               "called after cuInit failed\n");
  std::abort();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char *symbol, void **pfn, int, cuuint64_t, CUdriverProcAddressQueryResult *status) {
  if (std::strcmp(symbol, "cuInit") == 0)
    *pfn = reinterpret_cast<void *>(&InitNoDevice);
  else if (std::strcmp(symbol, "cuGetErrorString") == 0)
    *pfn = reinterpret_cast<void *>(&ErrorString);
  else
    *pfn = reinterpret_cast<void *>(&CalledAfterFailedInit);
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
