// SPDX-License-Identifier: Apache-2.0
#include "support/memory_kinds.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "gpu/cuda_api.h"

namespace ufile::test {
namespace {

void Check(CUresult res, const char *what) {
  if (res != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + CudaErrorString(res));
}

// Makes the primary context of device current on this thread.
void UseDevice(int device) {
  CudaApi &api = Cuda();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  Check(api.cuDeviceGet(&dev, device), "cuDeviceGet");
  Check(api.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  Check(api.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

class HostMemory : public TestMemory {
 public:
  HostMemory(size_t size, bool lock) : size_(size), lock_(lock) {
    data_ = static_cast<char *>(std::malloc(size ? size : 1));
    if (lock_ && mlock(data_, size_) != 0) lock_ = false;  // RLIMIT_MEMLOCK: stay pageable
  }
  ~HostMemory() override {
    if (lock_) munlock(data_, size_);
    std::free(data_);
  }
  char *ptr() override { return data_; }
  size_t size() const override { return size_; }
  void Upload(const std::vector<uint8_t> &b) override { std::memcpy(data_, b.data(), size_); }
  std::vector<uint8_t> Download() override { return {data_, data_ + size_}; }

 private:
  char *data_;
  size_t size_;
  bool lock_;
};

// Memory the CPU reaches through cuMemcpy: device, managed, VMM, pinned.
class CudaMemory : public TestMemory {
 public:
  CudaMemory(MemoryKind kind, size_t size, int device) : kind_(kind), size_(size) {
    UseDevice(device);
    CudaApi &api = Cuda();
    const size_t n = size ? size : 1;
    switch (kind) {
      case MemoryKind::kPinned:
        Check(api.cuMemHostAlloc(reinterpret_cast<void **>(&host_), n, 0), "cuMemHostAlloc");
        return;
      case MemoryKind::kDevice:
        Check(api.cuMemAlloc(&dptr_, n), "cuMemAlloc");
        return;
      case MemoryKind::kManaged:
        Check(api.cuMemAllocManaged(&dptr_, n, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
        return;
      default:
        AllocVmm(device, n);
    }
  }
  ~CudaMemory() override {
    CudaApi &api = Cuda();
    if (kind_ == MemoryKind::kPinned) {
      api.cuMemFreeHost(host_);
    } else if (kind_ == MemoryKind::kVmm) {
      api.cuMemUnmap(dptr_, vmm_size_);
      api.cuMemRelease(vmm_handle_);
      api.cuMemAddressFree(dptr_, vmm_size_);
    } else {
      api.cuMemFree(dptr_);
    }
  }
  char *ptr() override {
    return kind_ == MemoryKind::kPinned ? host_ : reinterpret_cast<char *>(dptr_);
  }
  size_t size() const override { return size_; }
  void Upload(const std::vector<uint8_t> &b) override {
    if (kind_ == MemoryKind::kPinned) return (void)std::memcpy(host_, b.data(), size_);
    Check(Cuda().cuMemcpyHtoD(dptr_, b.data(), size_), "cuMemcpyHtoD");
    // From pageable memory it may return before its DMA lands, and ufile's
    // copies run on streams of their own: wait, as an application must.
    Check(Cuda().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  }
  std::vector<uint8_t> Download() override {
    std::vector<uint8_t> out(size_);
    if (kind_ == MemoryKind::kPinned) {
      std::memcpy(out.data(), host_, size_);
    } else {
      Check(Cuda().cuMemcpyDtoH(out.data(), dptr_, size_), "cuMemcpyDtoH");
    }
    return out;
  }

 private:
  void AllocVmm(int device, size_t n) {
    CudaApi &api = Cuda();
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t gran = 0;
    Check(api.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
    vmm_size_ = (n + gran - 1) / gran * gran;
    Check(api.cuMemAddressReserve(&dptr_, vmm_size_, 0, 0, 0), "cuMemAddressReserve");
    Check(api.cuMemCreate(&vmm_handle_, vmm_size_, &prop, 0), "cuMemCreate");
    Check(api.cuMemMap(dptr_, vmm_size_, 0, vmm_handle_, 0), "cuMemMap");
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    Check(api.cuMemSetAccess(dptr_, vmm_size_, &access, 1), "cuMemSetAccess");
  }

  MemoryKind kind_;
  size_t size_;
  char *host_ = nullptr;
  CUdeviceptr dptr_ = 0;
  size_t vmm_size_ = 0;
  CUmemGenericAllocationHandle vmm_handle_ = 0;
};

}  // namespace

std::string MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kPageable:
      return "pageable";
    case MemoryKind::kLocked:
      return "locked";
    case MemoryKind::kPinned:
      return "pinned";
    case MemoryKind::kDevice:
      return "device";
    case MemoryKind::kManaged:
      return "managed";
    case MemoryKind::kVmm:
      return "vmm";
  }
  return "?";
}

bool MemoryKindNeedsGpu(MemoryKind kind) {
  return kind != MemoryKind::kPageable && kind != MemoryKind::kLocked;
}

bool GpuAvailable() { return Cuda().available; }
std::string GpuUnavailableReason() { return Cuda().why_unavailable; }

std::unique_ptr<TestMemory> AllocateMemory(MemoryKind kind, size_t size, int device) {
  if (!MemoryKindNeedsGpu(kind)) return std::make_unique<HostMemory>(size, kind == MemoryKind::kLocked);
  if (!GpuAvailable()) return nullptr;
  return std::make_unique<CudaMemory>(kind, size, device);
}

}  // namespace ufile::test
