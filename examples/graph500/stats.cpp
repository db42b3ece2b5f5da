// SPDX-License-Identifier: Apache-2.0
#include "stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace g500 {

std::vector<uint64_t> SampleRoots(const Csr &g, unsigned n, uint64_t seed) {
  const uint64_t nv = g.nv();
  std::vector<uint64_t> eligible;
  for (uint64_t v = 0; v < nv; v++) {
    const auto row = g.Row(v);
    if (std::any_of(row.begin(), row.end(), [v](uint32_t u) { return u != v; }))
      eligible.push_back(v);
  }
  // A partial Fisher-Yates shuffle: the first n are a uniform sample.
  Rng rng(seed ^ 0x243f6a8885a308d3ull);
  const uint64_t k = std::min<uint64_t>(n, eligible.size());
  for (uint64_t i = 0; i < k; i++)
    std::swap(eligible[i], eligible[i + rng.Below(eligible.size() - i)]);
  eligible.resize(k);
  return eligible;
}

namespace {

double Quartile(const std::vector<double> &s, unsigned q) {
  const size_t n = s.size();
  if (n * q % 4 == 0) {
    const size_t k = n * q / 4;  // between the k-th and (k+1)-th samples
    if (k == 0) return s.front();
    if (k >= n) return s.back();
    return (s[k - 1] + s[k]) / 2;
  }
  return s[n * q / 4];
}

}  // namespace

Summary Summarise(std::vector<double> x, bool harmonic) {
  Summary r;
  const size_t n = x.size();
  if (n == 0) return r;
  std::sort(x.begin(), x.end());
  r.min = x.front();
  r.max = x.back();
  r.q1 = Quartile(x, 1);
  r.median = Quartile(x, 2);
  r.q3 = Quartile(x, 3);
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

namespace {

void PrintSummary(FILE *out, const std::string &prefix, const char *name, const Summary &s,
                  bool harmonic) {
  std::fprintf(out, "%smin_%s: %.6g\n", prefix.c_str(), name, s.min);
  std::fprintf(out, "%sfirstquartile_%s: %.6g\n", prefix.c_str(), name, s.q1);
  std::fprintf(out, "%smedian_%s: %.6g\n", prefix.c_str(), name, s.median);
  std::fprintf(out, "%sthirdquartile_%s: %.6g\n", prefix.c_str(), name, s.q3);
  std::fprintf(out, "%smax_%s: %.6g\n", prefix.c_str(), name, s.max);
  if (harmonic) {
    std::fprintf(out, "%sharmonic_mean_%s: %.6g\n", prefix.c_str(), name, s.hmean);
    std::fprintf(out, "%sharmonic_stddev_%s: %.6g\n", prefix.c_str(), name, s.hstddev);
  } else {
    std::fprintf(out, "%smean_%s: %.6g\n", prefix.c_str(), name, s.mean);
    std::fprintf(out, "%sstddev_%s: %.6g\n", prefix.c_str(), name, s.stddev);
  }
}

}  // namespace

void PrintGraph500(FILE *out, const std::string &prefix, const CsrHeader &h, double construction_s,
                   const std::vector<RunRecord> &runs) {
  std::vector<double> t, e, teps;
  for (const RunRecord &r : runs) {
    t.push_back(r.seconds);
    e.push_back(static_cast<double>(r.nedge));
    teps.push_back(r.seconds > 0 ? static_cast<double>(r.nedge) / r.seconds : 0);
  }
  std::fprintf(out, "%sSCALE: %u\n", prefix.c_str(), h.scale);
  std::fprintf(out, "%sedgefactor: %u\n", prefix.c_str(), h.edgefactor);
  std::fprintf(out, "%sNBFS: %zu\n", prefix.c_str(), runs.size());
  std::fprintf(out, "%sconstruction_time: %.6g\n", prefix.c_str(), construction_s);
  PrintSummary(out, prefix, "time", Summarise(t, false), false);
  PrintSummary(out, prefix, "nedge", Summarise(e, false), false);
  PrintSummary(out, prefix, "TEPS", Summarise(teps, true), true);
}

}  // namespace g500
