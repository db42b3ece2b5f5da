// SPDX-License-Identifier: Apache-2.0
#include "memory.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "gpu/cuda_api.h"

namespace bench {

Status Fail(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return Status{buf[0] ? buf : "error"};
}

Status ErrnoFail(const char *what, int err) {
  return Status{std::string(what) + ": " + std::strerror(err)};
}

std::string CudaError(CUresult res) {
  return ufile::CudaErrorString(res);
}

Gpu OpenGpu(int index) {
  Gpu gpu;
  if (index < 0) {
    gpu.name = "host memory (-d -1)";
    return gpu;
  }
  ufile::CudaApi &cu = ufile::Cuda();
  if (!cu.available) {
    gpu.name = "host memory (no GPU)";
    gpu.why = "no GPU: " + cu.why_unavailable;
    return gpu;
  }
  CUdevice dev = 0;
  CUresult res = cu.cuDeviceGet(&dev, index);
  if (res == CUDA_SUCCESS) res = cu.cuDevicePrimaryCtxRetain(&gpu.ctx, dev);
  if (res == CUDA_SUCCESS) res = cu.cuCtxSetCurrent(gpu.ctx);
  if (res != CUDA_SUCCESS) {
    gpu.name = "host memory (GPU " + std::to_string(index) + " unusable)";
    gpu.why = "GPU " + std::to_string(index) + " unusable: " + CudaError(res);
    gpu.ctx = nullptr;
    return gpu;
  }
  char name[256] = {};
  cu.cuDeviceGetName(name, sizeof name, dev);
  gpu.present = true;
  gpu.index = index;
  gpu.name = name;
  return gpu;
}

void BindThread(const Gpu &gpu) {
  if (gpu.present) ufile::Cuda().cuCtxSetCurrent(gpu.ctx);
}

const char *MemKindName(MemKind kind) {
  switch (kind) {
    case MemKind::kHost:
      return "host";
    case MemKind::kPinned:
      return "pinned";
    case MemKind::kDevice:
      return "device";
  }
  return "?";
}

Buffer::~Buffer() {
  Free();
}

Buffer::Buffer(Buffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), size_(other.size_), kind_(other.kind_) {}

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  if (this != &other) {
    Free();
    ptr_ = std::exchange(other.ptr_, nullptr);
    size_ = other.size_;
    kind_ = other.kind_;
  }
  return *this;
}

void Buffer::Free() {
  if (!ptr_) return;
  ufile::CudaApi &cu = ufile::Cuda();
  if (kind_ == MemKind::kDevice)
    cu.cuMemFree(reinterpret_cast<CUdeviceptr>(ptr_));
  else if (kind_ == MemKind::kPinned)
    cu.cuMemFreeHost(ptr_);
  else
    std::free(ptr_);
  ptr_ = nullptr;
}

Status Buffer::Alloc(MemKind kind, size_t size, Buffer *out) {
  out->Free();
  const size_t rounded = (size + 4095) & ~size_t{4095};
  void *p = nullptr;
  if (kind == MemKind::kHost) {
    p = std::aligned_alloc(4096, rounded);
    if (!p) return Fail("cannot allocate %zu bytes of host memory", rounded);
    std::memset(p, 0, rounded);  // fault it in now, not in the first timed run
  } else {
    ufile::CudaApi &cu = ufile::Cuda();
    if (!cu.available) return Fail("%s memory needs a GPU", MemKindName(kind));
    CUresult res = CUDA_SUCCESS;
    if (kind == MemKind::kPinned) {
      res = cu.cuMemHostAlloc(&p, rounded, CU_MEMHOSTALLOC_PORTABLE);
    } else {
      CUdeviceptr d = 0;
      res = cu.cuMemAlloc(&d, rounded);
      p = reinterpret_cast<void *>(d);
    }
    if (res != CUDA_SUCCESS)
      return Fail("cannot allocate %zu bytes of %s memory: %s", rounded, MemKindName(kind),
                  CudaError(res).c_str());
  }
  out->ptr_ = static_cast<char *>(p);
  out->size_ = size;
  out->kind_ = kind;
  return {};
}

Status CopyToHost(void *dst, const char *src, size_t n, bool src_on_device) {
  if (!src_on_device) {
    std::memcpy(dst, src, n);
    return {};
  }
  CUresult res = ufile::Cuda().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), n);
  if (res != CUDA_SUCCESS) return Fail("cuMemcpyDtoH: %s", CudaError(res).c_str());
  return {};
}

Status CopyFromHost(char *dst, const void *src, size_t n, bool dst_on_device) {
  if (!dst_on_device) {
    std::memcpy(dst, src, n);
    return {};
  }
  CUresult res = ufile::Cuda().cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, n);
  if (res != CUDA_SUCCESS) return Fail("cuMemcpyHtoD: %s", CudaError(res).c_str());
  return {};
}

}  // namespace bench
