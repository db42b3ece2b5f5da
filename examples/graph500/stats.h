// SPDX-License-Identifier: Apache-2.0
// Graph500's search keys and its output: statistics of times, edge counts and
// TEPS over the searches, TEPS summarised by the harmonic mean, printed as
// the reference code's block (one `name: value` a line, the specification's
// field names) so that existing parsers read it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "csr.h"

namespace g500 {

// Up to n distinct roots as the reference picks them: vertices drawn at
// random (from the generator's seed, in the graph's header, mixed with
// salt), a draw skipped when it repeats an earlier root or has no edge but
// self-loops; 2 nv draws at most, so fewer only on a graph with few
// connected vertices.
std::vector<uint64_t> SampleRoots(const Csr &g, unsigned n, uint64_t salt);

struct Summary {
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  double mean = 0, stddev = 0;
  // Only for rates: the harmonic mean and its standard deviation.
  double hmean = 0, hstddev = 0;
};

// Order statistics as the reference computes them (a quartile is the mean
// of the two samples around its position), mean and sample standard
// deviation; with harmonic, the harmonic mean and its standard deviation
// (stddev of 1/x, scaled by hmean^2 / sqrt(n - 1)).
Summary Summarise(std::vector<double> x, bool harmonic);

struct RunRecord {
  double seconds = 0;
  uint64_t nedge = 0;
  double validate_seconds = 0;
};

// The reference's block for one mode: a `mode:` line (the mode's name then
// `note`, e.g. " (cold page cache)"), then SCALE, edgefactor, NBFS,
// graph_generation, num_mpi_processes, construction_time (kernel 1, from the
// header), then bfs_{min,firstquartile,median,thirdquartile,max,mean,stddev}
// of _time and _nedge, bfs_{min,...,max}_TEPS, bfs_harmonic_mean_TEPS,
// bfs_harmonic_stddev_TEPS and the _validate times. Names padded to 32
// columns as the reference prints them. The caller adds its own fields and
// ends the block with an empty line.
void PrintGraph500(FILE *out, const std::string &mode, const std::string &note, const CsrHeader &h,
                   const std::vector<RunRecord> &runs);

// One `name: value` line, padded as the block's.
void PrintField(FILE *out, const std::string &name, const std::string &value);

}  // namespace g500
