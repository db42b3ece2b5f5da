// SPDX-License-Identifier: Apache-2.0
#include "devio/host_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "gpu/cuda_api.h"

namespace ufile::devio {

HostRegion::~HostRegion() {
  if (registered_) {
    const CUresult r = Cuda().cuMemHostUnregister(host_);
    if (r != CUDA_SUCCESS)
      UFILE_LOG_WARN("devio: cuMemHostUnregister: %s", CudaErrorString(r).c_str());
  }
  if (host_) munmap(host_, size_);
}

Result<std::unique_ptr<HostRegion>> HostRegion::Map(size_t size) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (size == 0 || size > (size_t{1} << 40)) return Status::Errno(EINVAL);
  const size_t bytes = (size + page - 1) / page * page;
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    UFILE_LOG_ERROR("devio: mmap of %zu bytes: %s", bytes, strerror(err));
    return Status::Errno(err == ENOMEM ? ENOMEM : err);
  }
  std::unique_ptr<HostRegion> r(new HostRegion());
  r->host_ = p;
  r->size_ = bytes;
  r->device_ = reinterpret_cast<uint64_t>(p);
  return r;
}

Status HostRegion::MapToGpu() {
  CudaApi &cu = Cuda();
  CUresult r = cu.cuMemHostRegister(host_, size_,
                                    CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
  if (r != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("devio: cuMemHostRegister(%zu bytes): %s", size_, CudaErrorString(r).c_str());
    return Status::Cuda(r);
  }
  registered_ = true;
  CUdeviceptr d = 0;
  r = cu.cuMemHostGetDevicePointer(&d, host_, 0);
  if (r != CUDA_SUCCESS) {
    UFILE_LOG_ERROR("devio: cuMemHostGetDevicePointer: %s", CudaErrorString(r).c_str());
    return Status::Cuda(r);
  }
  device_ = static_cast<uint64_t>(d);
  return Status::Ok();
}

}  // namespace ufile::devio
