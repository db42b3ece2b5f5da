// SPDX-License-Identifier: Apache-2.0
// ufile-stats' text output, in the spirit of gds_stats: global counters,
// batch counters, the size histogram (level >= 2), per-GPU rows (level 3).
#pragma once

#include <cstdio>

#include "stats/reader.h"

namespace ufile::tools {

// Prints sample s at detail level (1..3). prev, when not null, is the sample
// taken interval_s seconds earlier: the "now" rates are computed from it.
void PrintSample(std::FILE *out, const stats::Sample &s, int level, const stats::Sample *prev,
                 double interval_s);

}  // namespace ufile::tools
