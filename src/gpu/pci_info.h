// SPDX-License-Identifier: Apache-2.0
// PCI facts about a GPU: its bus id (from CUDA) and the size of its BAR1
// aperture (NVML, loaded at run time, else sysfs).
// Thread-safety: stateless.
#pragma once

#include <string>

#include "base/status.h"

namespace ufile {

// "0000:00:06.0" for CUDA device ordinal device.
Result<std::string> PciBusId(int device);
// Size in bytes of BAR1 (sysfs resource line 1) of device.
Result<size_t> Bar1Bytes(int device);

}  // namespace ufile
