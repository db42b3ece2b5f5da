// SPDX-License-Identifier: Apache-2.0
// BAR1 size from NVML (libnvidia-ml.so.1, loaded at run time like libcuda:
// no link-time dependency). NVML knows it where sysfs does not show the
// GPU's resources (seen in a VM).
// Thread-safety: may be called from any thread (NVML counts its inits).
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace ufile {

// BAR1 size in bytes of the GPU at PCI bus id pci_bus_id ("0000:00:06.0"),
// or CU_FILE_PLATFORM_NOT_SUPPORTED (NVML missing or refusing; why logged at
// DEBUG).
Result<size_t> NvmlBar1Bytes(const std::string &pci_bus_id);

}  // namespace ufile
