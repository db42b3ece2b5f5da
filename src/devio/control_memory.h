// SPDX-License-Identifier: Apache-2.0
// ControlMemory: the set's device-memory block (queue views, file table,
// queue control, slot words, the closing flag). On a GPU it is cuMemAlloc'd
// and read or written by copies on a private non-blocking stream through a
// pinned mirror, so a check never waits for (or blocks) a running kernel.
// For host-only sets (tests: host threads stand in for the GPU) it is plain
// host memory and the copies are memcpy.
// Thread-safety: Upload/Download may be called from any thread, one at a
// time (the set serializes them).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace ufile::devio {

class ControlMemory {
 public:
  ControlMemory() = default;
  ~ControlMemory();
  ControlMemory(const ControlMemory &) = delete;
  ControlMemory &operator=(const ControlMemory &) = delete;

  // bytes of zeroed memory; on the GPU when ctx is non-null (ctx current).
  Status Allocate(size_t bytes, CUcontext ctx);
  // The address device code uses.
  uint64_t base() const { return base_; }
  bool on_gpu() const { return ctx_ != nullptr; }
  Status Upload(size_t off, const void *src, size_t n);
  Status Download(size_t off, void *dst, size_t n);
  // Frees; returns false (and leaks) if the context is unusable.
  void Free();

 private:
  Status Sync();
  CUcontext ctx_ = nullptr;
  uint64_t base_ = 0;
  size_t size_ = 0;
  void *host_ = nullptr;    // host-only: the memory; GPU: the pinned mirror
  CUstream stream_ = nullptr;
};

}  // namespace ufile::devio
