// SPDX-License-Identifier: Apache-2.0
// Graph500's search keys and its output: statistics of times, edge counts and
// TEPS over the searches, TEPS summarised by the harmonic mean.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "csr.h"

namespace g500 {

// Up to n distinct roots drawn at random from the vertices whose degree,
// not counting self-loops, is at least one (fewer only if the graph has
// fewer such vertices).
std::vector<uint64_t> SampleRoots(const Csr &g, unsigned n, uint64_t seed);

struct Summary {
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  double mean = 0, stddev = 0;
  // Only for rates: the harmonic mean and its standard deviation.
  double hmean = 0, hstddev = 0;
};

// Order statistics (quartiles as the mean of the two samples around the
// position when it falls between them), mean and sample standard deviation;
// with harmonic, the harmonic mean and its standard deviation
// (stddev of 1/x, scaled by hmean^2 / sqrt(n - 1)).
Summary Summarise(std::vector<double> x, bool harmonic);

struct RunRecord {
  double seconds = 0;
  uint64_t nedge = 0;
};

// The specification's output block (SCALE, edgefactor, NBFS, construction
// time, time/nedge/TEPS statistics), each line prefixed with `prefix`.
void PrintGraph500(FILE *out, const std::string &prefix, const CsrHeader &h, double construction_s,
                   const std::vector<RunRecord> &runs);

}  // namespace g500
