// SPDX-License-Identifier: Apache-2.0
#include "gpu/cuda_api.h"

#include <dlfcn.h>

#include <mutex>

#include "base/log.h"

namespace ufile {
namespace {

using GetProcAddressFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);

// Resolves every entry through cuGetProcAddress at the header's CUDA version,
// so each pointer has exactly the signature decltype() gave it.
bool ResolveAll(CudaApi &api, GetProcAddressFn get_proc, std::string &missing) {
  bool all = true;
#define UFILE_CUDA_RESOLVE(name)                                                        \
  {                                                                                     \
    void *fn = nullptr;                                                                 \
    CUdriverProcAddressQueryResult found{};                                             \
    if (get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=      \
            CUDA_SUCCESS ||                                                             \
        fn == nullptr) {                                                                \
      all = false;                                                                      \
      missing += std::string(missing.empty() ? "" : ", ") + #name;                      \
    } else {                                                                            \
      api.name = reinterpret_cast<decltype(api.name)>(fn);                              \
    }                                                                                   \
  }
  UFILE_CUDA_FUNCTIONS(UFILE_CUDA_RESOLVE)
#undef UFILE_CUDA_RESOLVE
  void *fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (get_proc("cuCtxGetDevice", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found) ==
      CUDA_SUCCESS)
    api.cuCtxGetDevice = reinterpret_cast<decltype(api.cuCtxGetDevice)>(fn);
  return all;
}

// res as a number and the driver's text for it, through `api` itself: Load
// runs inside Cuda()'s first call, where calling Cuda() again would wait on
// its own initialisation forever.
std::string ErrorText(const CudaApi &api, CUresult res) {
  const char *text = nullptr;
  if (api.loaded && api.cuGetErrorString && api.cuGetErrorString(res, &text) == CUDA_SUCCESS &&
      text)
    return std::to_string(static_cast<int>(res)) + " (" + text + ")";
  return std::to_string(static_cast<int>(res));
}

void Load(CudaApi &api) {
  // RTLD_NODELETE: libcuda stays mapped for the life of the process.
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    api.why_unavailable = std::string("libcuda.so.1 not loadable: ") + dlerror();
    return;
  }
  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    api.why_unavailable = "libcuda.so.1 has no cuGetProcAddress_v2 (driver older than CUDA 12)";
    return;
  }
  std::string missing;
  if (!ResolveAll(api, get_proc, missing)) {
    api.why_unavailable = "libcuda.so.1 lacks: " + missing;
    return;
  }
  api.loaded = true;
  CUresult res = api.cuInit(0);
  if (res != CUDA_SUCCESS) {
    api.why_unavailable = "cuInit failed: " + ErrorText(api, res);
    return;
  }
  api.cuDriverGetVersion(&api.driver_version);
  if (api.cuDeviceGetCount(&api.device_count) != CUDA_SUCCESS || api.device_count == 0) {
    api.why_unavailable = "no CUDA device";
    api.device_count = 0;
    return;
  }
  api.available = true;
}

}  // namespace

CudaApi &Cuda() {
  static CudaApi *api = [] {
    auto *a = new CudaApi();  // never destroyed: no CUDA work in static destructors
    Load(*a);
    return a;
  }();
  return *api;
}

std::string CudaErrorString(CUresult res) {
  return ErrorText(Cuda(), res);
}

ScopedContext::ScopedContext(CUcontext ctx) {
  CudaApi &api = Cuda();
  if (!ctx || !api.available) return;
  if (api.cuCtxGetCurrent(&prev_) != CUDA_SUCCESS) prev_ = nullptr;
  if (prev_ == ctx) return;
  switched_ = api.cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (switched_) Cuda().cuCtxSetCurrent(prev_);
}

}  // namespace ufile
