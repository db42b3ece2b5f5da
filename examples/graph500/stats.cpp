// SPDX-License-Identifier: Apache-2.0
#include "stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

namespace g500 {

std::vector<uint64_t> SampleRoots(const Csr &g, unsigned n, uint64_t salt) {
  const uint64_t nv = g.nv();
  std::vector<uint64_t> roots;
  std::unordered_set<uint64_t> taken;
  Rng rng(Mix64(g.header().seed ^ 0x243f6a8885a308d3ull) ^ salt);
  for (uint64_t draws = 0; roots.size() < n && draws < 2 * nv; draws++) {
    const uint64_t v = rng.Below(nv);
    if (taken.count(v) > 0) continue;
    const auto row = g.Row(v);
    if (std::none_of(row.begin(), row.end(), [v](uint32_t u) { return u != v; })) continue;
    taken.insert(v);
    roots.push_back(v);
  }
  return roots;
}

Summary Summarise(std::vector<double> x, bool harmonic) {
  Summary r;
  const size_t n = x.size();
  if (n == 0) return r;
  std::sort(x.begin(), x.end());
  r.min = x.front();
  r.max = x.back();
  r.q1 = (x[(n - 1) / 4] + x[n / 4]) / 2;
  r.median = (x[(n - 1) / 2] + x[n / 2]) / 2;
  r.q3 = (x[n - 1 - (n - 1) / 4] + x[n - 1 - n / 4]) / 2;
  r.mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  r.stddev = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0;
  if (harmonic && r.min > 0) {
    double inv = 0;
    for (double v : x) inv += 1 / v;
    const double inv_mean = inv / static_cast<double>(n);
    r.hmean = 1 / inv_mean;
    double iss = 0;
    for (double v : x) iss += (1 / v - inv_mean) * (1 / v - inv_mean);
    r.hstddev = n > 1 ? std::sqrt(iss) / static_cast<double>(n - 1) * r.hmean * r.hmean : 0;
  }
  return r;
}

void PrintField(FILE *out, const std::string &name, const std::string &value) {
  std::fprintf(out, "%-32s%s\n", (name + ":").c_str(), value.c_str());
}

namespace {

std::string Num(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

void PrintSummary(FILE *out, const char *name, const Summary &s, int digits, bool harmonic) {
  const std::string n = name;
  PrintField(out, "bfs_min_" + n, Num(s.min, digits));
  PrintField(out, "bfs_firstquartile_" + n, Num(s.q1, digits));
  PrintField(out, "bfs_median_" + n, Num(s.median, digits));
  PrintField(out, "bfs_thirdquartile_" + n, Num(s.q3, digits));
  PrintField(out, "bfs_max_" + n, Num(s.max, digits));
  if (harmonic) {
    PrintField(out, "bfs_harmonic_mean_" + n, Num(s.hmean, digits));
    PrintField(out, "bfs_harmonic_stddev_" + n, Num(s.hstddev, digits));
  } else {
    PrintField(out, "bfs_mean_" + n, Num(s.mean, digits));
    PrintField(out, "bfs_stddev_" + n, Num(s.stddev, digits));
  }
}

// TEPS as the reference derives them: from the statistics of seconds per
// edge, inverted (so the quartiles swap and the mean becomes the harmonic mean).
Summary TepsSummary(const std::vector<RunRecord> &runs) {
  std::vector<double> spe;
  for (const RunRecord &r : runs)
    spe.push_back(r.nedge > 0 ? r.seconds / static_cast<double>(r.nedge) : HUGE_VAL);
  const Summary x = Summarise(spe, false);
  const auto inv = [](double v) { return v > 0 && std::isfinite(v) ? 1 / v : 0.0; };
  Summary r;
  r.min = inv(x.max);
  r.q1 = inv(x.q3);
  r.median = inv(x.median);
  r.q3 = inv(x.q1);
  r.max = inv(x.min);
  r.hmean = inv(x.mean);
  const double n = static_cast<double>(runs.size());
  r.hstddev =
      n > 1 && std::isfinite(x.stddev) ? x.stddev * r.hmean * r.hmean / std::sqrt(n - 1) : 0;
  return r;
}

}  // namespace

void PrintGraph500(FILE *out, const std::string &mode, const std::string &note, const CsrHeader &h,
                   const std::vector<RunRecord> &runs) {
  std::vector<double> t, e, val;
  for (const RunRecord &r : runs) {
    t.push_back(r.seconds);
    e.push_back(static_cast<double>(r.nedge));
    val.push_back(r.validate_seconds);
  }
  PrintField(out, "mode", mode + note);
  PrintField(out, "SCALE", std::to_string(h.scale));
  PrintField(out, "edgefactor", std::to_string(h.edgefactor));
  PrintField(out, "NBFS", std::to_string(runs.size()));
  PrintField(out, "graph_generation", Num(h.generation_s, 6));
  PrintField(out, "num_mpi_processes", "1");
  PrintField(out, "construction_time", Num(h.construction_s, 6));
  PrintSummary(out, "time", Summarise(t, false), 6, false);
  PrintSummary(out, "nedge", Summarise(e, false), 11, false);
  PrintSummary(out, "TEPS", TepsSummary(runs), 6, true);
  PrintSummary(out, "validate", Summarise(val, false), 6, false);
}

}  // namespace g500
