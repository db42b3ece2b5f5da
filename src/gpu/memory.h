// SPDX-License-Identifier: Apache-2.0
// What a user pointer is: host memory the CPU can fill directly, or memory
// that needs a copy engine (device, managed, VMM), with the CUDA context that
// copies to it must run in.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace ufile {

enum class MemKind {
  kHostPageable,  // plain host memory
  kHostPinned,    // cuMemHostAlloc'd or cuMemHostRegister'd host memory
  kDevice,        // cuMemAlloc, cudaMalloc, VMM mappings
  kManaged,       // cuMemAllocManaged
};

struct MemInfo {
  MemKind kind = MemKind::kHostPageable;
  int device = -1;           // ordinal for kDevice/kManaged
  CUcontext ctx = nullptr;   // the allocation's context (null for VMM: use primary)
  uintptr_t range_start = 0; // the allocation's extent, when CUDA knows it
  size_t range_size = 0;
  bool needs_copy() const { return kind == MemKind::kDevice || kind == MemKind::kManaged; }
};

// Classifies ptr. Without a usable CUDA driver every pointer is host memory.
Result<MemInfo> ClassifyPointer(const void *ptr);

const char *MemKindName(MemKind kind);

// Primary contexts retained by the library, one per device, released by
// ReleaseAll() at driver close (never in a static destructor).
class PrimaryContexts {
 public:
  PrimaryContexts();
  ~PrimaryContexts();
  PrimaryContexts(const PrimaryContexts &) = delete;
  PrimaryContexts &operator=(const PrimaryContexts &) = delete;

  // The primary context of device, retained on first use.
  Result<CUcontext> Get(int device);
  // The context copies to info's memory run in.
  Result<CUcontext> ContextFor(const MemInfo &info);
  void ReleaseAll();

 private:
  std::mutex mu_;
  std::vector<CUcontext> ctx_;  // guarded by mu_; index = device ordinal
};

}  // namespace ufile
