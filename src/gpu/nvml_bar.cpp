// SPDX-License-Identifier: Apache-2.0
#include "gpu/nvml_bar.h"

#include <dlfcn.h>

#include "base/log.h"

namespace ufile {
namespace {

// The few NVML entry points used, declared from the published API.
using NvmlReturn = int;  // nvmlReturn_t; 0 is NVML_SUCCESS
using NvmlDevice = struct NvmlDeviceSt *;
struct NvmlBar1Memory {
  unsigned long long total, free, used;  // bytes
};

struct Nvml {
  NvmlReturn (*init)() = nullptr;      // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;  // nvmlShutdown
  NvmlReturn (*by_bus_id)(const char *, NvmlDevice *) = nullptr;  // ..._v2
  NvmlReturn (*bar1)(NvmlDevice, NvmlBar1Memory *) = nullptr;
  bool ok = false;
};

template <class F>
void Bind(void *lib, const char *name, F *f) {
  *f = reinterpret_cast<F>(dlsym(lib, name));
}

const Nvml &Load() {
  static const Nvml nvml = [] {
    Nvml n;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) return n;
    Bind(lib, "nvmlInit_v2", &n.init);
    Bind(lib, "nvmlShutdown", &n.shutdown);
    Bind(lib, "nvmlDeviceGetHandleByPciBusId_v2", &n.by_bus_id);
    Bind(lib, "nvmlDeviceGetBAR1MemoryInfo", &n.bar1);
    n.ok = n.init && n.shutdown && n.by_bus_id && n.bar1;
    return n;
  }();
  return nvml;
}

}  // namespace

Result<size_t> NvmlBar1Bytes(const std::string &pci_bus_id) {
  const Nvml &n = Load();
  if (!n.ok) {
    UFILE_LOG_DEBUG("NVML: libnvidia-ml.so.1 not loadable: %s", dlerror());
    return Status::Op(CU_FILE_PLATFORM_NOT_SUPPORTED);
  }
  NvmlReturn r = n.init();
  if (r != 0) {
    UFILE_LOG_DEBUG("NVML: nvmlInit_v2 returned %d", r);
    return Status::Op(CU_FILE_PLATFORM_NOT_SUPPORTED);
  }
  NvmlDevice dev = nullptr;
  NvmlBar1Memory mem{};
  r = n.by_bus_id(pci_bus_id.c_str(), &dev);
  if (r == 0) r = n.bar1(dev, &mem);
  n.shutdown();
  if (r != 0 || mem.total == 0) {
    UFILE_LOG_DEBUG("NVML: BAR1 of %s: error %d", pci_bus_id.c_str(), r);
    return Status::Op(CU_FILE_PLATFORM_NOT_SUPPORTED);
  }
  return static_cast<size_t>(mem.total);
}

}  // namespace ufile
