// SPDX-License-Identifier: Apache-2.0
// The GPU ufile-bench measures against and the buffers it moves data into.
// CUDA comes from ufile's run-time table (gpu/cuda_api.h), so the tool loads
// and runs host-memory rows on machines without a GPU or libcuda.
// Thread-safety: Buffers are allocated and freed on the main thread; worker
// threads call BindThread() before touching GPU memory.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "common.h"

namespace bench {

// The device the run uses; present == false: host memory only.
struct Gpu {
  bool present = false;
  int index = -1;
  CUcontext ctx = nullptr;  // primary context, retained for the process's life
  std::string name;         // "NVIDIA H200", or "host memory (...)" in short
  std::string why;          // host memory: why no GPU is used ("" for -d -1)
};

// Opens GPU index (retains its primary context, makes it current here).
// index < 0 or no usable CUDA: a host-only Gpu; its why says why.
Gpu OpenGpu(int index);
// Makes the GPU's context current on the calling thread (no-op for host).
void BindThread(const Gpu &gpu);

enum class MemKind { kHost, kPinned, kDevice };
const char *MemKindName(MemKind kind);

// One allocation, freed on destruction. Move-only.
class Buffer {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer &&other) noexcept;
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  // 4 KiB-aligned host memory, cuMemHostAlloc'd pinned memory or cuMemAlloc'd
  // device memory of size bytes.
  static Status Alloc(MemKind kind, size_t size, Buffer *out);

  char *data() const { return ptr_; }
  size_t size() const { return size_; }
  MemKind kind() const { return kind_; }
  bool on_device() const { return kind_ == MemKind::kDevice; }

 private:
  void Free();
  char *ptr_ = nullptr;
  size_t size_ = 0;
  MemKind kind_ = MemKind::kHost;
};

// Synchronous copies between any memory (device pointers included) and host
// memory; plain memcpy when src and dst are both host memory.
Status CopyToHost(void *dst, const char *src, size_t n, bool src_on_device);
Status CopyFromHost(char *dst, const void *src, size_t n, bool dst_on_device);

// "CUDA_ERROR_X (text)".
std::string CudaError(CUresult res);

}  // namespace bench
