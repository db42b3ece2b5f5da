// SPDX-License-Identifier: Apache-2.0
// --compare: one table per I/O size, every row on the same file in this one
// process: pinned-copy (PCIe ceiling), raw (storage ceiling), cpu, naive at
// the best setting of a sweep, nvidia (NVIDIA's libcufile, where installed)
// and ufile with its defaults; each as GB/s and as a ratio to the table's
// ceiling, with CPU-seconds per GB.
#pragma once

#include "memory.h"
#include "options.h"
#include "report.h"

namespace bench {

// Returns the exit status: 0, or 1 when ufile's row failed or any row's data
// did not verify.
int RunCompare(const Options &opt, const Gpu &gpu, const ReportContext &ctx);

// The row spec the options describe, for one I/O size.
RowSpec BaseSpec(const Options &opt, uint64_t io_size);

}  // namespace bench
