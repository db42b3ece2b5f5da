// SPDX-License-Identifier: Apache-2.0
// cuFileBufRegister / cuFileBufDeregister.
#include <cstdint>

#include "api/api_util.h"
#include "core/io_request.h"
#include "core/runtime.h"
#include "stats/stats.h"

using namespace ufile;

namespace {
constexpr int kKnownFlags = CU_FILE_RDMA_REGISTER | CU_FILE_RDMA_RELAXED_ORDERING;
}

extern "C" CUfileError_t cuFileBufRegister(const void *bufPtr_base, size_t length, int flags) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    const auto base = reinterpret_cast<uintptr_t>(bufPtr_base);
    if (!bufPtr_base)
      return UFILE_API_REFUSE("cuFileBufRegister", CU_FILE_INVALID_VALUE, "NULL buffer");
    if (length == 0)
      return UFILE_API_REFUSE("cuFileBufRegister", CU_FILE_INVALID_VALUE, "length 0 for %p",
                              bufPtr_base);
    const bool wraps = length > UINTPTR_MAX - base;
    if (flags & ~kKnownFlags)
      return UFILE_API_REFUSE("cuFileBufRegister", CU_FILE_INVALID_VALUE, "unknown flags 0x%x",
                              flags);
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    if (!g.ok()) return g.status().ToCuFileError();
    stats::OnSession(g->runtime());  // profile.cufile_stats / profile.nvtx of this session
    Result<MemInfo> mem = ClassifyPointer(bufPtr_base);
    if (!mem.ok()) return mem.status().ToCuFileError();
    Status allowed = CheckMemoryAllowed("cuFileBufRegister", (*g)->config(), *mem, bufPtr_base);
    if (!allowed.ok()) return allowed.ToCuFileError();
    // Device memory past its allocation (a wrapping length included) is
    // NVIDIA's CUDA_POINTER_RANGE_ERROR; other memory that wraps, a bad length.
    if (mem->needs_copy() && mem->range_size &&
        (wraps || base + length > mem->range_start + mem->range_size))
      return UFILE_API_REFUSE("cuFileBufRegister", CU_FILE_CUDA_POINTER_RANGE_ERROR,
                              "%p + %zu leaves its %zu-byte allocation", bufPtr_base, length,
                              mem->range_size);
    if (wraps)
      return UFILE_API_REFUSE("cuFileBufRegister", CU_FILE_INVALID_VALUE,
                              "length %zu for %p wraps the address space", length, bufPtr_base);
    RegisteredBuffer buf{base, length, flags, *mem};
    Status s = (*g)->buffers().Add(buf);
    stats::CountBufRegister(buf, s);
    if (!s.ok())
      UFILE_LOG_ERROR("cuFileBufRegister(%p, %zu): %s", bufPtr_base, length, s.ToString().c_str());
    return s.ToCuFileError();
  });
}

extern "C" CUfileError_t cuFileBufDeregister(const void *bufPtr_base) {
  return api::Guard(__func__, [&]() -> CUfileError_t {
    if (!bufPtr_base)
      return UFILE_API_REFUSE("cuFileBufDeregister", CU_FILE_INVALID_VALUE, "NULL buffer");
    // Closed, nothing is registered: no implicit open for a refusal.
    Result<Driver::OpGuard> g = Driver::Get().EnterIfOpen();
    if (!g.ok() && g.status().code() != CU_FILE_DRIVER_NOT_INITIALIZED)
      return g.status().ToCuFileError();
    if (!g.ok())
      return UFILE_API_REFUSE("cuFileBufDeregister", CU_FILE_MEMORY_NOT_REGISTERED,
                              "%p: the driver is not open", bufPtr_base);
    Status s = (*g)->buffers().Remove(reinterpret_cast<uintptr_t>(bufPtr_base));
    stats::CountBufDeregister(bufPtr_base, s);
    if (!s.ok()) UFILE_LOG_ERROR("cuFileBufDeregister(%p): not registered", bufPtr_base);
    return s.ToCuFileError();
  });
}
