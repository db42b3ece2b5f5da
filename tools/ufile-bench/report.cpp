// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

namespace bench {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double Percentile(const std::vector<uint32_t> &sorted, double p) {
  if (sorted.empty()) return NAN;
  const auto i = static_cast<size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)] * 1e-3;
}

// JSON has no NaN: absent figures are null.
nlohmann::json Num(double v) {
  return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
}

std::string Fixed(double v, int prec, int width) {
  char buf[64];
  if (std::isnan(v))
    std::snprintf(buf, sizeof buf, "%*s", width, "-");
  else
    std::snprintf(buf, sizeof buf, "%*.*f", width, prec, v);
  return buf;
}

const char *VerifiedText(Verified v) {
  switch (v) {
    case Verified::kNotAsked:
      return "-";
    case Verified::kNotApplicable:
      return "n/a";
    case Verified::kOk:
      return "verified";
    case Verified::kFailed:
      return "FAILED";
  }
  return "?";
}

void PrintJson(const ReportContext &ctx, const RowResult &r, FILE *out) {
  nlohmann::json j;
  j["type"] = r.type;
  j["setting"] = r.setting;
  j["op"] = OpName(r.spec.op);
  j["io_size"] = r.spec.io_size;
  j["threads"] = r.spec.threads;
  j["file"] = ctx.file;
  j["file_size"] = ctx.file_size;
  j["cache"] = r.cache;
  j["odirect"] = r.spec.odirect;
  j["memory"] = ctx.gpu;
  if (!ctx.gpu_why.empty()) j["memory_why"] = ctx.gpu_why;
  j["repeats"] = r.gbps_runs.size();
  j["gbps"] = Num(r.gbps);
  j["gbps_min"] = Num(r.gbps_min);
  j["gbps_max"] = Num(r.gbps_max);
  j["gbps_runs"] = r.gbps_runs;
  j["iops"] = Num(r.iops);
  j["p50_us"] = Num(r.p50_us);
  j["p99_us"] = Num(r.p99_us);
  j["cpu_s_per_gb"] = Num(r.cpu_s_per_gb);
  j["ratio"] = Num(r.ratio);
  j["ceiling"] = r.ceiling.empty() ? nlohmann::json() : nlohmann::json(r.ceiling);
  j["verified"] = r.verified == Verified::kOk       ? nlohmann::json(true)
                  : r.verified == Verified::kFailed ? nlohmann::json(false)
                                                    : nlohmann::json();
  j["error"] = r.error.empty() ? nlohmann::json() : nlohmann::json(r.error);
  if (r.skipped) j["skipped"] = true;
  if (!r.target.empty()) {
    j["target"] = r.target;
    j["target_met"] = r.target_met < 0 ? nlohmann::json() : nlohmann::json(r.target_met == 1);
  }
  if (!std::isnan(r.vs_naive)) j["vs_naive"] = r.vs_naive;
  if (!std::isnan(r.cpu_vs_naive)) j["cpu_vs_naive"] = r.cpu_vs_naive;
  j["date"] = ctx.date;
  j["host"] = ctx.host;
  std::fprintf(out, "%s\n", j.dump().c_str());
  std::fflush(out);
}

}  // namespace

void Summarize(const std::vector<Sample> &runs, RowResult *row) {
  std::vector<double> iops, cpu;
  std::vector<uint32_t> lat;
  for (const Sample &s : runs) {
    if (s.seconds <= 0 || s.bytes == 0) continue;
    row->gbps_runs.push_back(static_cast<double>(s.bytes) / s.seconds * 1e-9);
    iops.push_back(static_cast<double>(s.ios) / s.seconds);
    cpu.push_back(s.cpu_seconds / (static_cast<double>(s.bytes) * 1e-9));
    lat.insert(lat.end(), s.lat_ns.begin(), s.lat_ns.end());
  }
  if (row->gbps_runs.empty()) return;
  row->gbps = Median(row->gbps_runs);
  row->gbps_min = *std::min_element(row->gbps_runs.begin(), row->gbps_runs.end());
  row->gbps_max = *std::max_element(row->gbps_runs.begin(), row->gbps_runs.end());
  row->iops = Median(iops);
  row->cpu_s_per_gb = Median(cpu);
  std::sort(lat.begin(), lat.end());
  row->p50_us = Percentile(lat, 0.50);
  row->p99_us = Percentile(lat, 0.99);
}

std::string UtcNow() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void PrintTableHeader(const ReportContext &ctx, const RowSpec &spec, int repeats,
                      const std::string &cache, const char *title) {
  if (ctx.json) return;
  std::printf("\n%s: %s %s, %d thread%s, %s%s, file %s (%s), %s\n", title, OpName(spec.op),
              SizeText(spec.io_size).c_str(), spec.threads, spec.threads == 1 ? "" : "s",
              cache.c_str(), spec.odirect ? ", O_DIRECT" : "", ctx.file.c_str(),
              SizeText(ctx.file_size).c_str(), ctx.gpu.c_str());
  std::printf("%s on %s; median of %d run%s, GB/s = 1e9 bytes/s\n", ctx.date.c_str(),
              ctx.host.c_str(), repeats, repeats == 1 ? "" : "s");
  std::printf("%-12s %9s %19s %11s %8s %8s %8s %6s  %-8s %s\n", "type", "GB/s", "(min - max)",
              "IOPS", "p50 us", "p99 us", "CPU s/GB", "ratio", "verify", "setting");
}

void PrintRow(const ReportContext &ctx, const RowResult &r) {
  if (ctx.json_out) PrintJson(ctx, r, ctx.json_out);
  if (ctx.json) {
    PrintJson(ctx, r, stdout);
  } else if (!r.error.empty()) {
    std::printf("%-12s %9s  %s\n", r.type.c_str(), r.skipped ? "skipped" : "failed",
                r.error.c_str());
  } else {
    // snprintf, not "(" + std::string: GCC 12 at -O3 flags the latter with a
    // false -Werror=restrict.
    char range[80];
    std::snprintf(range, sizeof range, "(%s - %s)", Fixed(r.gbps_min, 2, 0).c_str(),
                  Fixed(r.gbps_max, 2, 0).c_str());
    std::printf("%-12s %s %19s %s %s %s %s %s  %-8s %s\n", r.type.c_str(),
                Fixed(r.gbps, 2, 9).c_str(), range, Fixed(r.iops, 0, 11).c_str(),
                Fixed(r.p50_us, 1, 8).c_str(), Fixed(r.p99_us, 1, 8).c_str(),
                Fixed(r.cpu_s_per_gb, 3, 8).c_str(), Fixed(r.ratio, 3, 6).c_str(),
                VerifiedText(r.verified), r.setting.c_str());
  }
  std::fflush(stdout);
}

void PrintCacheNote(const ReportContext &ctx, const std::string &cache) {
  if (!ctx.json && cache != "hot") std::printf("page cache: %s before each run\n", cache.c_str());
}

void PrintTableNotes(const ReportContext &ctx, const std::vector<RowResult> &rows,
                     bool gpu_present, bool compare) {
  if (ctx.json) return;
  bool no_latency = false;
  for (const RowResult &r : rows)
    no_latency |= r.error.empty() && !r.gbps_runs.empty() && std::isnan(r.p50_us);
  if (no_latency)
    std::printf("p50/p99 -: latency is recorded per I/O only for I/Os of %s or less\n",
                SizeText(kLatencyMaxIo).c_str());
  if (compare && !gpu_present)
    std::printf("ratio -: host memory has no ceiling (no GPU link); memcpy copies what the table "
                "moves, for reference\n");
  std::fflush(stdout);
}

void PrintVerdict(const ReportContext &ctx, const RowResult &u) {
  if (ctx.json) return;
  PrintCacheNote(ctx, u.cache);
  if (!u.ceiling.empty()) std::printf("ceiling: %s\n", u.ceiling.c_str());
  if (!u.target.empty())
    std::printf("target (ufile, %d thread%s): %s -> %s\n", u.spec.threads,
                u.spec.threads == 1 ? "" : "s", u.target.c_str(),
                u.target_met < 0 ? "unknown" : (u.target_met ? "met" : "NOT met"));
  if (!std::isnan(u.vs_naive))
    std::printf("ufile / naive best: %.2fx the GB/s, %.2fx the CPU s/GB\n", u.vs_naive,
                u.cpu_vs_naive);
  std::fflush(stdout);
}

}  // namespace bench
