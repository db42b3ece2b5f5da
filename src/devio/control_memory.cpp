// SPDX-License-Identifier: Apache-2.0
#include "devio/control_memory.h"

#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "gpu/cuda_api.h"

namespace ufile::devio {
namespace {

Status CudaFail(const char *what, CUresult r) {
  UFILE_LOG_ERROR("devio: %s: %s", what, CudaErrorString(r).c_str());
  return Status::Cuda(r);
}

}  // namespace

ControlMemory::~ControlMemory() { Free(); }

Status ControlMemory::Allocate(size_t bytes, CUcontext ctx) {
  size_ = (bytes + 4095) / 4096 * 4096;
  if (!ctx) {
    host_ = std::aligned_alloc(4096, size_);
    if (!host_) return Status::Errno(ENOMEM);
    std::memset(host_, 0, size_);
    base_ = reinterpret_cast<uint64_t>(host_);
    return Status::Ok();
  }
  ctx_ = ctx;
  CudaApi &cu = Cuda();
  ScopedContext scope(ctx);
  CUresult r = cu.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) return CudaFail("cuStreamCreate", r);
  r = cu.cuMemHostAlloc(&host_, size_, CU_MEMHOSTALLOC_PORTABLE);
  if (r != CUDA_SUCCESS) return CudaFail("cuMemHostAlloc", r);
  std::memset(host_, 0, size_);
  CUdeviceptr d = 0;
  r = cu.cuMemAlloc(&d, size_);
  if (r != CUDA_SUCCESS) return CudaFail("cuMemAlloc", r);
  base_ = static_cast<uint64_t>(d);
  return Upload(0, host_, size_);
}

Status ControlMemory::Sync() {
  const CUresult r = Cuda().cuStreamSynchronize(stream_);
  return r == CUDA_SUCCESS ? Status::Ok() : CudaFail("cuStreamSynchronize", r);
}

Status ControlMemory::Upload(size_t off, const void *src, size_t n) {
  if (off + n > size_) return Status::Errno(EINVAL);
  if (!ctx_) {
    std::memcpy(static_cast<char *>(host_) + off, src, n);
    return Status::Ok();
  }
  ScopedContext scope(ctx_);
  char *mirror = static_cast<char *>(host_) + off;
  if (mirror != src) std::memcpy(mirror, src, n);
  const CUresult r = Cuda().cuMemcpyHtoDAsync(base_ + off, mirror, n, stream_);
  if (r != CUDA_SUCCESS) return CudaFail("cuMemcpyHtoDAsync", r);
  return Sync();
}

Status ControlMemory::Download(size_t off, void *dst, size_t n) {
  if (off + n > size_) return Status::Errno(EINVAL);
  if (!ctx_) {
    // Host threads write this memory with atomics; a plain copy of aligned
    // words is what a DMA read gives too (each word is whole).
    const auto *src = reinterpret_cast<const uint64_t *>(static_cast<char *>(host_) + off);
    auto *out = static_cast<uint64_t *>(dst);
    if (off % 8 == 0 && n % 8 == 0 && reinterpret_cast<uintptr_t>(dst) % 8 == 0) {
      for (size_t i = 0; i < n / 8; ++i) out[i] = __atomic_load_n(&src[i], __ATOMIC_ACQUIRE);
    } else {
      std::memcpy(dst, static_cast<char *>(host_) + off, n);
    }
    return Status::Ok();
  }
  ScopedContext scope(ctx_);
  char *mirror = static_cast<char *>(host_) + off;
  const CUresult r = Cuda().cuMemcpyDtoHAsync(mirror, base_ + off, n, stream_);
  if (r != CUDA_SUCCESS) return CudaFail("cuMemcpyDtoHAsync", r);
  UFILE_RETURN_IF_ERROR(Sync());
  std::memcpy(dst, mirror, n);
  return Status::Ok();
}

void ControlMemory::Free() {
  if (!ctx_) {
    std::free(host_);
    host_ = nullptr;
    base_ = 0;
    return;
  }
  CudaApi &cu = Cuda();
  ScopedContext scope(ctx_);
  if (base_) {
    const CUresult r = cu.cuMemFree(static_cast<CUdeviceptr>(base_));
    if (r != CUDA_SUCCESS) UFILE_LOG_WARN("devio: cuMemFree: %s", CudaErrorString(r).c_str());
  }
  if (host_) cu.cuMemFreeHost(host_);
  if (stream_) cu.cuStreamDestroy(stream_);
  base_ = 0;
  host_ = nullptr;
  stream_ = nullptr;
  ctx_ = nullptr;
}

}  // namespace ufile::devio
