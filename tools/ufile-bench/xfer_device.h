// SPDX-License-Identifier: Apache-2.0
// -x device: kernels read or write the file themselves through a ufile
// queue set (ufile/device.cuh), on the no-CPU path and on the proxy path,
// beside the host-initiated baselines of the same run (--compare: the PCIe
// ceiling, raw O_DIRECT when cold, ufile's cuFileRead/cuFileWrite with -w
// threads). Reads of 64 KiB or less also get a queue-depth-1 latency row.
// -x device-chase: the dependent-offset walk (each next offset is computed
// from the node just read), device-driven against the host-driven loop.
// Knobs: --devio KEY=VALUE,... (docs/DEVICE_IO.md lists them). Every row
// reports the CPU cores the process used while it ran (SQPOLL threads,
// proxy workers and the helper included).
// Thread-safety: main thread only.
#pragma once

#include "memory.h"
#include "options.h"
#include "report.h"

namespace bench {

int RunDevice(const Options &opt, const Gpu &gpu, const ReportContext &ctx);
int RunDeviceChase(const Options &opt, const Gpu &gpu, const ReportContext &ctx);

}  // namespace bench
