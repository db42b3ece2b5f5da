// SPDX-License-Identifier: Apache-2.0
#include "gpu/memory.h"

#include "base/log.h"
#include "gpu/cuda_api.h"

namespace ufile {

const char *MemKindName(MemKind kind) {
  switch (kind) {
    case MemKind::kHostPageable:
      return "host-pageable";
    case MemKind::kHostPinned:
      return "host-pinned";
    case MemKind::kDevice:
      return "device";
    case MemKind::kManaged:
      return "managed";
  }
  return "?";
}

Result<MemInfo> ClassifyPointer(const void *ptr) {
  MemInfo info;
  CudaApi &api = Cuda();
  if (!api.available) return info;

  unsigned int mem_type = 0;
  CUcontext ctx = nullptr;
  int ordinal = -1;
  unsigned int managed = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *values[] = {&mem_type, &ctx, &ordinal, &managed, &start, &size};
  // Unlike cuPointerGetAttribute, this succeeds for plain host pointers and
  // leaves the attributes zeroed.
  CUresult res = api.cuPointerGetAttributes(6, attrs, values,
                                            reinterpret_cast<CUdeviceptr>(ptr));
  if (res != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("cuPointerGetAttributes(%p) failed: %s", ptr, CudaErrorString(res).c_str());
    return Status::Cuda(res);
  }
  info.range_start = static_cast<uintptr_t>(start);
  info.range_size = size;
  if (managed) {
    info.kind = MemKind::kManaged;
  } else if (mem_type == CU_MEMORYTYPE_DEVICE || mem_type == CU_MEMORYTYPE_ARRAY) {
    info.kind = MemKind::kDevice;
  } else if (mem_type == CU_MEMORYTYPE_HOST) {
    info.kind = MemKind::kHostPinned;
  } else {
    info.kind = MemKind::kHostPageable;
  }
  if (info.needs_copy()) {
    info.device = ordinal;
    info.ctx = ctx;
  }
  return info;
}

PrimaryContexts::PrimaryContexts() = default;
PrimaryContexts::~PrimaryContexts() { ReleaseAll(); }

Result<CUcontext> PrimaryContexts::Get(int device) {
  CudaApi &api = Cuda();
  if (!api.available) return Status::Op(CU_FILE_DEVICE_NOT_FOUND);
  if (device < 0 || device >= api.device_count) return Status::Op(CU_FILE_DEVICE_NOT_FOUND);
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx_.size() <= static_cast<size_t>(device)) ctx_.resize(device + 1, nullptr);
  if (ctx_[device]) return ctx_[device];
  CUdevice dev = 0;
  CUresult res = api.cuDeviceGet(&dev, device);
  CUcontext ctx = nullptr;
  if (res == CUDA_SUCCESS) res = api.cuDevicePrimaryCtxRetain(&ctx, dev);
  if (res != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("retaining the primary context of GPU %d failed: %s", device,
                    CudaErrorString(res).c_str());
    return Status::Cuda(res);
  }
  ctx_[device] = ctx;
  return ctx;
}

Result<CUcontext> PrimaryContexts::ContextFor(const MemInfo &info) {
  if (info.ctx) return info.ctx;
  return Get(info.device);
}

void PrimaryContexts::ReleaseAll() {
  std::lock_guard<std::mutex> lock(mu_);
  CudaApi &api = Cuda();
  for (size_t i = 0; i < ctx_.size(); ++i) {
    if (!ctx_[i]) continue;
    CUdevice dev = 0;
    if (api.cuDeviceGet(&dev, static_cast<int>(i)) == CUDA_SUCCESS)
      api.cuDevicePrimaryCtxRelease(dev);
    ctx_[i] = nullptr;
  }
}

}  // namespace ufile
