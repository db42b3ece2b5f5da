// SPDX-License-Identifier: Apache-2.0
// The CUDA driver API, loaded at run time: a table of function pointers filled
// from libcuda.so.1 with dlopen + cuGetProcAddress, so that libufile loads and
// works with host memory on machines without a GPU or driver.
// The table is also the CUDA half of the test seam: a test may replace one
// entry (ScopedCudaOverride) to inject a CUDA error.
// Every entry is resolved at the header's CUDA_VERSION, so its pointer has
// exactly the signature decltype() gives it. Functions whose newest variant
// changed arity without a header macro (cuCtxSynchronize, cuStreamGetCtx in
// CUDA 13) are deliberately absent; cuCtxGetDevice is resolved at 12.0.
// Thread-safety: Cuda() is initialized once (thread-safe); entries are
// read-only afterwards except in tests.
#pragma once

#include <cuda.h>

#include <string>

namespace ufile {

#define UFILE_CUDA_FUNCTIONS(X)  \
  X(cuInit)                      \
  X(cuDriverGetVersion)          \
  X(cuGetErrorString)            \
  X(cuDeviceGet)                 \
  X(cuDeviceGetCount)            \
  X(cuDeviceGetName)             \
  X(cuDeviceGetUuid)             \
  X(cuDeviceGetAttribute)        \
  X(cuDeviceTotalMem)            \
  X(cuDevicePrimaryCtxRetain)    \
  X(cuDevicePrimaryCtxRelease)   \
  X(cuCtxGetCurrent)             \
  X(cuCtxSetCurrent)             \
  X(cuCtxPushCurrent)            \
  X(cuCtxPopCurrent)             \
  X(cuPointerGetAttribute)       \
  X(cuPointerGetAttributes)      \
  X(cuMemGetAddressRange)        \
  X(cuMemAlloc)                  \
  X(cuMemFree)                   \
  X(cuMemAllocManaged)           \
  X(cuMemHostAlloc)              \
  X(cuMemFreeHost)               \
  X(cuMemHostRegister)           \
  X(cuMemHostUnregister)         \
  X(cuMemHostGetDevicePointer)   \
  X(cuMemcpy)                    \
  X(cuMemcpyAsync)               \
  X(cuMemcpyHtoD)                \
  X(cuMemcpyDtoH)                \
  X(cuMemcpyHtoDAsync)           \
  X(cuMemcpyDtoHAsync)           \
  X(cuMemsetD8)                  \
  X(cuModuleLoadData)            \
  X(cuModuleGetFunction)         \
  X(cuModuleUnload)              \
  X(cuLaunchKernel)              \
  X(cuStreamCreate)              \
  X(cuStreamDestroy)             \
  X(cuStreamSynchronize)         \
  X(cuStreamQuery)               \
  X(cuLaunchHostFunc)            \
  X(cuStreamWaitValue32)         \
  X(cuStreamWriteValue32)        \
  X(cuEventCreate)               \
  X(cuEventRecord)               \
  X(cuEventSynchronize)          \
  X(cuEventQuery)                \
  X(cuEventDestroy)              \
  X(cuMemAddressReserve)         \
  X(cuMemAddressFree)            \
  X(cuMemCreate)                 \
  X(cuMemRelease)                \
  X(cuMemMap)                    \
  X(cuMemUnmap)                  \
  X(cuMemSetAccess)              \
  X(cuMemGetAllocationGranularity)

struct CudaApi {
#define UFILE_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  UFILE_CUDA_FUNCTIONS(UFILE_CUDA_MEMBER)
#undef UFILE_CUDA_MEMBER

  // The one-argument cuCtxGetDevice (the current context's device), resolved at
  // CUDA 12.0 since CUDA 13 gave the name a second argument; null if absent.
  CUresult (*cuCtxGetDevice)(CUdevice *device) = nullptr;

  bool loaded = false;    // libcuda.so.1 found and every entry resolved
  bool available = false; // cuInit succeeded and at least one device exists
  int device_count = 0;
  int driver_version = 0;
  std::string why_unavailable;  // for logs and ufile-check
};

// The process-wide table; loads libcuda and calls cuInit on first use.
CudaApi &Cuda();

// "CUDA_ERROR_INVALID_VALUE (invalid argument)" or the number if unknown.
std::string CudaErrorString(CUresult res);

// Replaces one entry for a scope (tests): ScopedCudaOverride o(&CudaApi::cuMemcpyHtoDAsync, fake);
template <class Fn>
class ScopedCudaOverride {
 public:
  ScopedCudaOverride(Fn CudaApi::*member, Fn fn) : member_(member), old_(Cuda().*member) {
    Cuda().*member_ = fn;
  }
  ~ScopedCudaOverride() { Cuda().*member_ = old_; }
  ScopedCudaOverride(const ScopedCudaOverride &) = delete;
  ScopedCudaOverride &operator=(const ScopedCudaOverride &) = delete;

 private:
  Fn CudaApi::*member_;
  Fn old_;
};

// Makes ctx current on this thread for one scope, restoring the previous one.
class ScopedContext {
 public:
  explicit ScopedContext(CUcontext ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

 private:
  CUcontext prev_ = nullptr;
  bool switched_ = false;
};

}  // namespace ufile
