// SPDX-License-Identifier: Apache-2.0
// Measures one row: sets up its transfer and workers once, runs it `repeats`
// times (dropping the page cache first when cold), then checks its data.
// Verification, two ways:
//  - inline (single rows, -V): every I/O of the timed runs is checked (reads)
//    or written with the pattern (writes, read back after the runs); the
//    figures then include the checking;
//  - pass (--compare -V): the timed runs are left alone; one more sequential
//    pass over the first verify_bytes of the file, checked the same way.
#pragma once

#include <string>

#include "report.h"
#include "runner.h"

namespace bench {

enum class VerifyMode { kNone, kInline, kPass };

struct MeasurePlan {
  int repeats = 1;
  double seconds = 5;
  uint64_t passes = 0;  // > 0: instead of seconds
  bool cold = false;
  VerifyMode verify = VerifyMode::kNone;
  uint64_t verify_bytes = 0;  // kPass: bytes checked
  bool progress = false;
  bool thread_cpu = false;  // --thread-cpu
};

RowResult MeasureRow(const RowSpec &spec, const Gpu &gpu, const MeasurePlan &plan);

}  // namespace bench
