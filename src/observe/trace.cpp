// SPDX-License-Identifier: Apache-2.0
// NVTX v3 is header-only: the first call looks for an injection library
// (NVTX_INJECTION64_PATH) with dlopen; without one every call is a no-op.
#include "observe/trace.h"

#include <cstring>

#if __has_include(<nvtx3/nvToolsExt.h>)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <nvtx3/nvToolsExt.h>
#pragma GCC diagnostic pop
#define UFILE_HAVE_NVTX 1
#endif

namespace ufile::trace {

#ifdef UFILE_HAVE_NVTX
namespace {

constexpr const char *kNames[] = {
    "cuFileRead",          "cuFileWrite",     "cuFileBatchIOSubmit", "cuFileBatchIOGetStatus",
    "cuFileBatchIOCancel", "cuFileReadAsync", "cuFileWriteAsync",
};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<size_t>(RangeKind::kCount));

struct Domain {
  nvtxDomainHandle_t handle = nullptr;
  nvtxStringHandle_t names[static_cast<int>(RangeKind::kCount)] = {};
  Domain() {
    handle = nvtxDomainCreateA("ufile");
    for (int i = 0; i < static_cast<int>(RangeKind::kCount); ++i)
      names[i] = nvtxDomainRegisterStringA(handle, kNames[i]);
  }
};

Domain &TheDomain() {
  static Domain *domain = new Domain();  // never destroyed: ranges may end at exit
  return *domain;
}

}  // namespace

void PushRange(RangeKind kind, uint64_t bytes) {
  Domain &d = TheDomain();
  nvtxEventAttributes_t attr;
  std::memset(&attr, 0, sizeof attr);
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = d.names[static_cast<int>(kind)];
  attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  attr.payload.ullValue = bytes;
  nvtxDomainRangePushEx(d.handle, &attr);
}

void PopRange() {
  nvtxDomainRangePop(TheDomain().handle);
}

#else  // a toolkit without NVTX v3 headers: ranges are no-ops

void PushRange(RangeKind, uint64_t) {}
void PopRange() {}

#endif

}  // namespace ufile::trace
