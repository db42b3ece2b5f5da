// SPDX-License-Identifier: Apache-2.0
// A row's result (median of its repeats) and how it is printed: a text table
// for people, or one JSON object per row and line (-j).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "runner.h"

namespace bench {

enum class Verified { kNotAsked, kNotApplicable, kOk, kFailed };

struct RowResult {
  RowSpec spec;
  std::string type;     // "ufile", "naive", ... as printed
  std::string setting;  // how it ran
  std::string cache;    // "hot", or "cold (fadvise+drop_caches)"
  std::vector<double> gbps_runs;
  double gbps = NAN, gbps_min = NAN, gbps_max = NAN;
  double iops = NAN, p50_us = NAN, p99_us = NAN, cpu_s_per_gb = NAN;
  double ratio = NAN;   // to the table's ceiling (--compare)
  std::string ceiling;  // which row that is
  Verified verified = Verified::kNotAsked;
  std::string error;  // empty: measured
  bool skipped = false;  // not measured, on purpose; error says why
  // --compare, ufile's row: ufile's target for this table.
  std::string target;     // "ratio >= 0.90", "" when none applies
  int target_met = -1;    // -1 unknown, 0 no, 1 yes
  double vs_naive = NAN;  // ufile GB/s over the naive loop's best
  double cpu_vs_naive = NAN;
};

// Median GB/s, spread, IOPS, latency percentiles, CPU-s/GB from the repeats.
void Summarize(const std::vector<Sample> &runs, RowResult *row);

struct ReportContext {
  std::string file;
  uint64_t file_size = 0;
  std::string gpu;      // name, or "host memory (...)" in short
  std::string gpu_why;  // host memory: why no GPU is used ("" for -d -1)
  std::string date;  // UTC, ISO 8601
  std::string host;
  bool json = false;
  FILE *json_out = nullptr;  // --json-file: rows also go here as JSON
};

// The lines above a table (text mode only): file, op, size, machine, date.
void PrintTableHeader(const ReportContext &ctx, const RowSpec &spec, int repeats,
                      const std::string &cache, const char *title);
void PrintRow(const ReportContext &ctx, const RowResult &row);
// Text mode, cold runs: how the page cache was dropped ("cold (fadvise)").
void PrintCacheNote(const ReportContext &ctx, const std::string &cache);
// Text mode: what a "-" in the rows means, and, for a --compare table in
// host memory, why it has no ceiling and no ratios.
void PrintTableNotes(const ReportContext &ctx, const std::vector<RowResult> &rows,
                     bool gpu_present, bool compare = true);
// Text mode: the verdict lines under a --compare table.
void PrintVerdict(const ReportContext &ctx, const RowResult &ufile_row);

std::string UtcNow();

}  // namespace bench
