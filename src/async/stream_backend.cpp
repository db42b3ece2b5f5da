// SPDX-License-Identifier: Apache-2.0
#include "async/stream_backend.h"

#include <dlfcn.h>

#include <atomic>

#include "gpu/cuda_api.h"

namespace ufile {
namespace {

// Two entry points looked up by their exported (first-version) names, not
// through the CudaApi table: the table resolves cuStreamGetCtx at CUDA 13's
// version, which is the three-argument cuStreamGetCtx_v2, and has no
// cuStreamIsCapturing.
struct EntryPoints {
  CUresult (*get_ctx)(CUstream, CUcontext *) = nullptr;
  CUresult (*is_capturing)(CUstream, CUstreamCaptureStatus *) = nullptr;
};
const EntryPoints &Entry() {
  static const EntryPoints e = [] {
    EntryPoints r;
    if (void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      r.get_ctx = reinterpret_cast<decltype(r.get_ctx)>(dlsym(lib, "cuStreamGetCtx"));
      r.is_capturing =
          reinterpret_cast<decltype(r.is_capturing)>(dlsym(lib, "cuStreamIsCapturing"));
    }
    return r;
  }();
  return e;
}

StreamBackend g_real;
std::atomic<StreamBackend *> g_current{&g_real};

}  // namespace

bool StreamBackend::Usable(std::string *why) {
  CudaApi &api = Cuda();
  if (!api.available) {
    *why = "CUDA is not usable: " + api.why_unavailable;
    return false;
  }
  if (!Entry().get_ctx) {
    *why = "libcuda.so.1 exports no cuStreamGetCtx";
    return false;
  }
  return true;
}

CUresult StreamBackend::Context(CUstream stream, CUcontext *ctx) {
  return Entry().get_ctx(stream, ctx);
}

bool StreamBackend::Capturing(CUstream stream) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  return Entry().is_capturing && Entry().is_capturing(stream, &st) == CUDA_SUCCESS &&
         st != CU_STREAM_CAPTURE_STATUS_NONE;
}

// Unified addressing: pinned host memory has the same address on the GPU.
CUresult StreamBackend::WriteValue(CUstream stream, uint32_t *addr, uint32_t value) {
  // The default flags put a memory barrier before the write: what earlier
  // work wrote is visible before the value is.
  return Cuda().cuStreamWriteValue32(stream, reinterpret_cast<CUdeviceptr>(addr), value,
                                     CU_STREAM_WRITE_VALUE_DEFAULT);
}

CUresult StreamBackend::WaitValue(CUstream stream, uint32_t *addr, uint32_t value) {
  return Cuda().cuStreamWaitValue32(stream, reinterpret_cast<CUdeviceptr>(addr), value,
                                    CU_STREAM_WAIT_VALUE_EQ);
}

CUresult StreamBackend::Synchronize(CUstream stream) {
  return Cuda().cuStreamSynchronize(stream);
}

StreamBackend &StreamBackend::Current() {
  return *g_current.load(std::memory_order_acquire);
}

StreamBackend *StreamBackend::Install(StreamBackend *b) {
  StreamBackend *prev = g_current.exchange(b ? b : &g_real, std::memory_order_acq_rel);
  return prev == &g_real ? nullptr : prev;
}

}  // namespace ufile
