// SPDX-License-Identifier: Apache-2.0
// Driver open/close, properties, version, BAR size.
#include <string>

#include "api/api_util.h"
#include "base/params.h"
#include "core/runtime.h"
#include "gpu/cuda_api.h"
#include "gpu/pci_info.h"
#include "ufile/version.h"

using namespace ufile;

extern "C" CUfileError_t cuFileDriverOpen(void) {
  return api::Guard(__func__, [] { return Driver::Get().Open().ToCuFileError(); });
}

// The header maps cuFileDriverClose to cuFileDriverClose_v2; both symbols
// exist for binaries built against either name.
#undef cuFileDriverClose
namespace {
// Inside another cuFile call on this thread (depth > 1: this call counts
// itself), or on one of ufile's I/O threads, a close cannot wait for the
// calls in flight: it is one of them.
CUfileError_t CloseDriver() {
  const bool inside = api::t_call_depth > 1 || WorkerPool::InPoolThread();
  return Driver::Get().Close(inside).ToCuFileError();
}
}  // namespace
extern "C" CUfileError_t cuFileDriverClose(void) { return api::Guard(__func__, CloseDriver); }
extern "C" CUfileError_t cuFileDriverClose_v2(void) { return api::Guard(__func__, CloseDriver); }

extern "C" long cuFileUseCount(void) { return Driver::Get().UseCount(); }

extern "C" CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *props) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!props)
      return UFILE_API_REFUSE("cuFileDriverGetProperties", CU_FILE_INVALID_VALUE, "NULL props");
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    if (!g.ok()) return g.status().ToCuFileError();
    Runtime &rt = g->runtime();
    const Config &cfg = rt.config();
    LiveProps &live = rt.props();
    *props = CUfileDrvProps_t{};
    // No nvidia-fs: its version is 0.0 and no filesystem is served through it.
    props->nvfs.poll_thresh_size = live.poll_threshold_kb;
    props->nvfs.max_direct_io_size = live.max_direct_io_kb;
    props->nvfs.dcontrolflags = (live.poll_mode ? 1u << CU_FILE_USE_POLL_MODE : 0u) |
                                (cfg.allow_compat_mode ? 1u << CU_FILE_ALLOW_COMPAT_MODE : 0u);
    props->fflags = UFILE_FEATURE_FLAGS;
    props->max_device_cache_size = static_cast<unsigned>(live.max_cache_kb);
    props->per_buffer_cache_size = static_cast<unsigned>(cfg.per_buffer_cache_size_kb);
    props->max_device_pinned_mem_size = static_cast<unsigned>(live.max_pinned_kb);
    props->max_batch_io_size = static_cast<unsigned>(cfg.io_batchsize);
    props->max_batch_io_timeout_msecs = static_cast<unsigned>(cfg.batch_io_timeout_ms);
    return api::Ok();
  });
}

namespace {

// The Set* calls change a running session: CU_FILE_DRIVER_NOT_INITIALIZED
// before open, CU_FILE_DRIVER_UNSUPPORTED_LIMIT for a value that
// cuFileSetParameterSizeT refuses.
template <class Apply>
CUfileError_t SetLive(const char *fn, CUFileSizeTConfigParameter_t param, size_t value,
                      Apply apply) {
  if (!Driver::Get().IsOpen())
    return UFILE_API_REFUSE("cuFileDriverSet*", CU_FILE_DRIVER_NOT_INITIALIZED,
                            "%s before cuFileDriverOpen", fn);
  // The parameter API's check: its range and, for KiB sizes, whole pages.
  std::string why;
  if (!CheckSizeTParam(param, value, &why))
    return UFILE_API_REFUSE("cuFileDriverSet*", CU_FILE_DRIVER_UNSUPPORTED_LIMIT, "%s(%zu): %s",
                            fn, value, why.c_str());
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  if (!g.ok()) return g.status().ToCuFileError();
  apply(g->runtime().props());
  return api::Ok();
}

}  // namespace

extern "C" CUfileError_t cuFileDriverSetPollMode(bool poll, size_t poll_threshold_size) {
  return api::Guard(__func__, [&] {
    return SetLive(__func__, CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, poll_threshold_size,
                   [&](LiveProps &p) {
                     p.poll_mode = poll;
                     p.poll_threshold_kb = poll_threshold_size;
                   });
  });
}

extern "C" CUfileError_t cuFileDriverSetMaxDirectIOSize(size_t max_direct_io_size) {
  return api::Guard(__func__, [&] {
    return SetLive(__func__, CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, max_direct_io_size,
                   [&](LiveProps &p) { p.max_direct_io_kb = max_direct_io_size; });
  });
}

extern "C" CUfileError_t cuFileDriverSetMaxCacheSize(size_t max_cache_size) {
  return api::Guard(__func__, [&] {
    return SetLive(__func__, CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, max_cache_size,
                   [&](LiveProps &p) { p.max_cache_kb = max_cache_size; });
  });
}

extern "C" CUfileError_t cuFileDriverSetMaxPinnedMemSize(size_t max_pinned_size) {
  return api::Guard(__func__, [&] {
    return SetLive(__func__, CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
                   max_pinned_size, [&](LiveProps &p) { p.max_pinned_kb = max_pinned_size; });
  });
}

extern "C" CUfileError_t cuFileGetVersion(int *version) {
  if (!version) {
    UFILE_LOG_ERROR("cuFileGetVersion: NULL version");
    return api::Err(CU_FILE_INVALID_VALUE);
  }
  *version = UFILE_CUFILE_API_VERSION;
  return api::Ok();
}

extern "C" CUfileError_t cuFileGetBARSizeInKB(int gpuIndex, size_t *barSize) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!barSize)
      return UFILE_API_REFUSE("cuFileGetBARSizeInKB", CU_FILE_INVALID_VALUE, "NULL barSize");
    CudaApi &cuda = Cuda();  // loading libcuda needs no session: refusals come first
    if (!cuda.available)
      return UFILE_API_REFUSE("cuFileGetBARSizeInKB", CU_FILE_DEVICE_NOT_FOUND, "no GPU: %s",
                              cuda.why_unavailable.c_str());
    if (gpuIndex < 0 || gpuIndex >= cuda.device_count)
      return UFILE_API_REFUSE("cuFileGetBARSizeInKB", CU_FILE_INVALID_VALUE,
                              "GPU index %d outside [0, %d)", gpuIndex, cuda.device_count);
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    if (!g.ok()) return g.status().ToCuFileError();
    Result<size_t> bytes = Bar1Bytes(gpuIndex);
    if (!bytes.ok()) return bytes.status().ToCuFileError();
    *barSize = *bytes / 1024;
    return api::Ok();
  });
}
