// SPDX-License-Identifier: Apache-2.0
// Test memory of every kind the API accepts, behind one interface so the
// same I/O cases run on host and GPU memory: pageable and locked host memory
// everywhere; pinned, device, managed and VMM memory where a GPU exists.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ufile::test {

enum class MemoryKind { kPageable, kLocked, kPinned, kDevice, kManaged, kVmm };

std::string MemoryKindName(MemoryKind kind);
bool MemoryKindNeedsGpu(MemoryKind kind);
// Whether a usable CUDA GPU is present (libcuda loaded, a device found).
bool GpuAvailable();
// Why not, for skip messages.
std::string GpuUnavailableReason();

class TestMemory {
 public:
  virtual ~TestMemory() = default;
  virtual char *ptr() = 0;  // what the API is given
  virtual size_t size() const = 0;
  virtual void Upload(const std::vector<uint8_t> &bytes) = 0;  // whole buffer
  virtual std::vector<uint8_t> Download() = 0;                 // whole buffer
};

// size bytes of kind; nullptr if the kind is impossible here (no GPU).
std::unique_ptr<TestMemory> AllocateMemory(MemoryKind kind, size_t size, int device = 0);

}  // namespace ufile::test
