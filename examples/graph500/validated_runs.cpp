// SPDX-License-Identifier: Apache-2.0
#include "validated_runs.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <numeric>

#include "cli.h"

namespace g500 {
namespace {

uint64_t PhysicalMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(size)
                               : uint64_t{16} << 30;
}

// The reference's count from a CSR: each non-loop entry of a reached vertex, halved.
// On `threads` workers: it reads the row of every reached vertex (17 GB at scale 27).
uint64_t CsrEdgeCount(const Csr &g, const std::vector<int64_t> &parent, unsigned threads) {
  std::vector<uint64_t> part(Threads(threads), 0);
  ParallelFor(g.nv(), threads, [&](uint64_t begin, uint64_t end, unsigned worker) {
    uint64_t n = 0;
    for (uint64_t v = begin; v < end; v++) {
      if (parent[v] < 0) continue;
      for (uint32_t u : g.Row(v)) n += u != v;
    }
    part[worker] = n;
  });
  return std::accumulate(part.begin(), part.end(), uint64_t{0}) / 2;
}

}  // namespace

ValidatedRuns::ValidatedRuns(const Csr &g, unsigned threads, uint64_t validate, uint64_t max_bytes)
    : g_(g),
      graph_{.scale = g.header().scale,
             .edgefactor = g.header().edgefactor,
             .seed = g.header().seed,
             .threads = threads},
      validate_(validate),
      batch_(EdgeListValidator::CapacityFor(g.header().scale,
                                            max_bytes ? max_bytes : PhysicalMemory() / 4)) {
  // No more lanes than trees to validate (16 at least: the validator's unit).
  batch_ = static_cast<unsigned>(std::min<uint64_t>(batch_, std::max<uint64_t>(16, validate)));
  batch_ = (batch_ + 15) / 16 * 16;
}

Status ValidatedRuns::Add(uint64_t root, double seconds, const std::vector<int64_t> &parent) {
  records_.push_back({.seconds = seconds});
  if (records_.size() > validate_) {
    records_.back().nedge = CsrEdgeCount(g_, parent, graph_.threads);
    return Status::Ok();
  }
  const double t0 = Now();
  if (val_ == nullptr) {
    val_ = std::make_unique<EdgeListValidator>(graph_, batch_);
    if (!val_->status().ok()) return val_->status();
  }
  const Validation v = val_->Add(root, parent);
  records_.back().validate_seconds = Now() - t0;
  seconds_ += records_.back().validate_seconds;
  if (!v.ok())
    return Status::Error(-EINVAL, "invalid tree from root " + std::to_string(root) + " (" +
                                      BfsErrorName(v.error) + "): " + v.msg);
  held_.push_back(records_.size() - 1);
  held_roots_.push_back(root);
  return val_->full() ? Check() : Status::Ok();
}

Status ValidatedRuns::Finish() {
  return val_ != nullptr && val_->held() > 0 ? Check() : Status::Ok();
}

Status ValidatedRuns::Check() {
  const double t0 = Now();
  const std::vector<Validation> got = val_->Check();
  const double pass = Now() - t0, share = pass / static_cast<double>(got.size());
  seconds_ += pass;
  passes_++;
  Status s;
  for (size_t i = 0; i < got.size(); i++) {
    RunRecord &r = records_[held_[i]];
    r.validate_seconds += share;
    r.nedge = got[i].nedge;
    if (!got[i].ok() && s.ok())
      s = Status::Error(-EINVAL, "invalid tree from root " + std::to_string(held_roots_[i]) + " (" +
                                     BfsErrorName(got[i].error) + "): " + got[i].msg);
    validated_ += got[i].ok();
  }
  held_.clear();
  held_roots_.clear();
  return s;
}

void PrintExtraFields(FILE *out, double setup_s, uint64_t bytes_read, uint64_t reads,
                      double cpu_cores, const ValidatedRuns &runs) {
  char b[256];
  std::snprintf(b, sizeof b, "%.6g", setup_s);
  PrintField(out, "setup_time", b);
  PrintField(out, "bytes_read", std::to_string(bytes_read));
  PrintField(out, "reads", std::to_string(reads));
  std::snprintf(b, sizeof b, "%.2f", cpu_cores);
  PrintField(out, "cpu_cores", b);
  std::snprintf(b, sizeof b,
                "%s (%llu of %zu trees against the regenerated edge list in %.3g s; passes: %llu "
                "of up to %u trees, %.3g GB)",
                runs.validated() > 0 ? "passed" : "skipped",
                static_cast<unsigned long long>(runs.validated()), runs.records().size(),
                runs.seconds(), static_cast<unsigned long long>(runs.passes()), runs.batch(),
                static_cast<double>(runs.batch_bytes()) / 1e9);
  PrintField(out, "validation", b);
}

}  // namespace g500
