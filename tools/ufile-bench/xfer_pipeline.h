// SPDX-License-Identifier: Apache-2.0
// -x pipeline: the stream API's target. The file is processed in chunks
// (read -> XOR kernel -> write), once as a two-stream cuFileReadAsync ->
// cuLaunchKernel -> cuFileWriteAsync pipeline and once synchronously a chunk
// at a time; the target is async <= 0.6x sync. Both are measured with two
// output layouts: one file <file>.out (chunk i at its input offset), and a
// file per stream <file>.out0/.out1 (chunk i in .out(i%2) at (i/2)*chunk).
// Thread-safety: main thread only.
#pragma once

#include "memory.h"
#include "options.h"
#include "report.h"

namespace bench {

// Measures both variants (median of the repeats), verifies the output after
// every run and prints the verdict. Returns the process exit status.
int RunPipeline(const Options &opt, const Gpu &gpu, const ReportContext &ctx);

}  // namespace bench
