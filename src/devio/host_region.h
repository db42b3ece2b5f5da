// SPDX-License-Identifier: Apache-2.0
// HostRegion: page-aligned anonymous memory, faulted in at creation, that
// io_uring reads and writes (rings, staging) and that may be mapped into a
// GPU (cuMemHostRegister DEVICEMAP|PORTABLE; the GPU then reaches it over
// PCIe at device_addr()). Unregistered and unmapped on destruction.
// Thread-safety: create, map and destroy on one thread; the memory itself is
// shared by design.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"

namespace ufile::devio {

class HostRegion {
 public:
  ~HostRegion();
  HostRegion(const HostRegion &) = delete;
  HostRegion &operator=(const HostRegion &) = delete;

  // size is rounded up to whole pages; the memory is zeroed.
  static Result<std::unique_ptr<HostRegion>> Map(size_t size);

  // Registers the region with the CUDA context current on this thread.
  Status MapToGpu();

  void *host() const { return host_; }
  size_t size() const { return size_; }
  // The GPU's address of host() (host() itself until mapped).
  uint64_t device_addr() const { return device_; }
  // The GPU's address of a pointer inside the region.
  template <class T>
  T *Device(const void *p) const {
    const auto off = static_cast<uint64_t>(static_cast<const char *>(p) - static_cast<char *>(host_));
    return reinterpret_cast<T *>(device_ + off);
  }

 private:
  HostRegion() = default;
  void *host_ = nullptr;
  size_t size_ = 0;
  uint64_t device_ = 0;
  bool registered_ = false;
};

}  // namespace ufile::devio
