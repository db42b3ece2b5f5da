// SPDX-License-Identifier: Apache-2.0
#include "compare.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "measure.h"

namespace bench {
namespace {

MeasurePlan PlanFor(const Options &opt) {
  MeasurePlan mp;
  mp.repeats = opt.effective_repeats();
  mp.seconds = opt.seconds;
  mp.passes = opt.passes;
  mp.cold = opt.cold;
  mp.verify = opt.verify ? VerifyMode::kPass : VerifyMode::kNone;
  mp.verify_bytes = opt.verify_bytes;
  mp.progress = !opt.quiet && isatty(STDERR_FILENO);
  mp.thread_cpu = opt.thread_cpu;
  return mp;
}

// The naive loop at its best: sequential rows sweep threads x chunk once
// (short runs, no repeats), then measure the winner like every other row.
// Random rows have nothing to chunk: -w threads, one chunk an I/O.
RowResult NaiveBest(const RowSpec &base, const Gpu &gpu, const MeasurePlan &mp) {
  RowSpec spec = base;
  spec.xfer = Xfer::kNaive;
  if (base.random()) return MeasureRow(spec, gpu, mp);
  MeasurePlan sweep = mp;
  sweep.repeats = 1;
  sweep.seconds = std::max(0.1, mp.seconds / 4);
  sweep.passes = mp.passes ? 1 : 0;
  sweep.verify = VerifyMode::kNone;
  RowSpec best;
  double best_gbps = -1;
  int tried = 0;
  std::string last_error;
  for (int threads : {1, 4, 8, 16}) {
    // More requests in flight than the file holds only re-reads blocks (and a
    // round of 16 x 1 GiB O_DIRECT requests would outlast any short run).
    if (threads > 1 && static_cast<uint64_t>(threads) * base.io_size > base.file_size) continue;
    for (uint64_t mib : {1, 4, 16}) {
      const uint64_t chunk = std::min<uint64_t>(mib << 20, base.io_size);
      if (chunk < (mib << 20) && mib > 1) continue;  // same as a smaller chunk
      spec.threads = threads;
      spec.chunk = chunk;
      RowResult r = MeasureRow(spec, gpu, sweep);
      ++tried;
      if (!r.error.empty()) last_error = r.error;
      if (r.error.empty() && r.gbps > best_gbps) {
        best_gbps = r.gbps;
        best = spec;
      }
    }
  }
  if (best_gbps < 0) {
    RowResult r;
    r.spec = spec;
    r.type = "naive";
    r.error = last_error;
    return r;
  }
  RowResult r = MeasureRow(best, gpu, mp);
  r.setting = "best of " + std::to_string(tried) + ": " + r.setting;
  return r;
}

// The row the table's ratios are against (ufile's targets name it).
const RowResult *CeilingOf(const Options &opt, const RowResult &copy, const RowResult &raw) {
  if (!opt.is_write()) return opt.cold ? &raw : &copy;
  if (opt.odirect) return &raw;
  if (std::isnan(copy.gbps)) return &raw;
  if (std::isnan(raw.gbps)) return &copy;
  return copy.gbps <= raw.gbps ? &copy : &raw;  // buffered: min(GPU->host, pwrite)
}

// Whether figure >= need (at_most: <=): 1, 0, or -1 when not measured.
int Meets(double figure, double need, bool at_most = false) {
  if (std::isnan(figure)) return -1;
  return (at_most ? figure <= need : figure >= need) ? 1 : 0;
}

// Both must hold: 0 if either fails, -1 if either is unknown, else 1.
int Both(int a, int b) {
  return (a == 0 || b == 0) ? 0 : (a < 0 || b < 0) ? -1 : 1;
}

// ufile's target for its row in this table, and whether it is met.
// Every table also asks for CPU s/GB no worse than the naive loop's.
void SetTarget(const Options &opt, const Gpu &gpu, const RowResult &naive, RowResult *u) {
  if (!std::isnan(naive.gbps) && !std::isnan(u->gbps)) {
    u->vs_naive = u->gbps / naive.gbps;
    u->cpu_vs_naive = u->cpu_s_per_gb / naive.cpu_s_per_gb;
  }
  if (!gpu.present || !u->error.empty()) return;  // the targets are for GPU memory
  int met = -1;
  char buf[80];
  if (opt.op == Op::kRandRead && opt.threads == 1) {
    u->target = "p50 <= 12 us";
    met = Meets(u->p50_us, 12, true);
  } else if (opt.op == Op::kRandRead && opt.threads >= 16) {
    u->target = "IOPS >= 400000";
    met = Meets(u->iops, 400000);
  } else if (opt.op == Op::kRead && !opt.cold) {
    u->target = "ratio >= 0.90, >= 1.25x naive";
    met = Both(Meets(u->ratio, 0.90), Meets(u->vs_naive, 1.25));
  } else if (opt.op == Op::kRead || opt.op == Op::kWrite) {
    const double want = opt.op == Op::kWrite && !opt.odirect ? 0.85 : 0.95;
    std::snprintf(buf, sizeof buf, "ratio >= %.2f", want);
    u->target = buf;
    met = Meets(u->ratio, want);
  } else {
    return;
  }
  u->target += ", CPU s/GB <= naive";
  u->target_met = Both(met, Meets(u->cpu_s_per_gb, naive.cpu_s_per_gb, true));
}

void SetRatio(const RowResult *ceiling, RowResult *row) {
  if (!ceiling || std::isnan(ceiling->gbps) || ceiling->gbps <= 0) return;
  row->ratio = row->gbps / ceiling->gbps;
  row->ceiling = ceiling->type + " (" + ceiling->setting + ")";
}

// One --compare table being measured; rows are printed as they finish.
struct Table {
  const Options &opt;
  const Gpu &gpu;
  const ReportContext &ctx;
  RowSpec base;
  MeasurePlan mp;
  std::vector<RowResult> rows;
  int ceiling = -1;  // index into rows
};

RowResult Measure(const Table &t, Xfer x, const MeasurePlan &mp) {
  RowSpec s = t.base;
  s.xfer = x;
  s.lib.clear();  // only the nvidia row loads a library
  return MeasureRow(s, t.gpu, mp);
}

void Add(Table &t, RowResult r) {
  SetRatio(t.ceiling < 0 ? nullptr : &t.rows[t.ceiling], &r);
  PrintRow(t.ctx, r);
  t.rows.push_back(std::move(r));
}

// pinned-copy and raw first: the ratios of every other row need them.
void MeasureCeilings(Table &t) {
  MeasurePlan no_cache = t.mp;
  no_cache.cold = false;  // no file: nothing to drop
  RowSpec s = t.base;
  s.xfer = Xfer::kPinnedCopy;
  // The link's best, as DESIGN.md measured it: 1 GiB copies, one stream.
  // Host memory has no link: its memcpy row copies what the table moves.
  if (!s.random() && t.gpu.present) {
    s.threads = 1;
    s.io_size = std::min<uint64_t>(s.file_size, 1ull << 30);
  }
  RowResult copy = MeasureRow(s, t.gpu, no_cache);
  if (!t.gpu.present) copy.type = "memcpy";
  s = t.base;
  s.xfer = Xfer::kRaw;
  if (!s.random()) {  // the storage ceiling: enough I/O in flight to fill the device
    s.threads = std::max(s.threads, 16);
    s.io_size = std::min<uint64_t>(s.io_size, 16ull << 20);
  }
  RowResult raw = MeasureRow(s, t.gpu, t.mp);
  if (t.gpu.present) {  // host memory has no ceiling to hold rows to
    t.ceiling = CeilingOf(t.opt, copy, raw) == &copy ? 0 : 1;
    RowResult *ceiling = t.ceiling == 0 ? &copy : &raw;
    SetRatio(ceiling, &copy);
    SetRatio(ceiling, &raw);
  }
  for (RowResult *r : {&copy, &raw}) {
    PrintRow(t.ctx, *r);
    t.rows.push_back(std::move(*r));
  }
}

RowResult NvidiaRow(const Table &t) {
  RowSpec s = t.base;
  s.xfer = Xfer::kNvidia;
  s.lib = t.opt.lib.empty() ? kNvidiaLib : t.opt.lib;
  if (access(s.lib.c_str(), F_OK) == 0) return MeasureRow(s, t.gpu, t.mp);
  RowResult r;
  r.spec = s;
  r.type = "nvidia";
  r.skipped = true;
  r.error = s.lib + " not found" +
            (t.opt.lib.empty() ? " (NVIDIA's library; --lib PATH names another)" : "");
  return r;
}

// One table: every row for one I/O size. Returns the exit status.
int CompareOne(const Options &opt, const Gpu &gpu, const ReportContext &ctx, uint64_t io) {
  Table t{opt, gpu, ctx, BaseSpec(opt, io), PlanFor(opt), {}, -1};
  t.rows.reserve(8);
  PrintTableHeader(ctx, t.base, t.mp.repeats, opt.cold ? "cold" : "hot", "compare");
  MeasureCeilings(t);
  Add(t, Measure(t, Xfer::kCpu, t.mp));
  Add(t, NaiveBest(t.base, gpu, t.mp));
  const RowResult naive = t.rows.back();
  Add(t, NvidiaRow(t));
  bool bad = false;
  // ufile with -w callers, then, when the naive sweep kept another thread
  // count, with as many callers as that: the same work as the naive row.
  RowSpec s = t.base;
  s.xfer = Xfer::kUfile;  // linked in, default config
  s.lib.clear();
  std::vector<int> callers{t.base.threads};
  if (naive.error.empty() && naive.spec.threads != t.base.threads)
    callers.push_back(naive.spec.threads);
  for (int n : callers) {
    s.threads = n;
    RowResult u = MeasureRow(s, gpu, t.mp);
    if (n != t.base.threads) u.setting += ", the naive row's thread count";
    if (t.ceiling >= 0) SetRatio(&t.rows[t.ceiling], &u);
    SetTarget(opt, gpu, naive, &u);
    Add(t, u);
    PrintVerdict(ctx, u);
    bad |= !u.error.empty();
  }
  PrintTableNotes(ctx, t.rows, gpu.present);
  for (const RowResult &r : t.rows) bad |= r.verified == Verified::kFailed;
  return bad ? 1 : 0;
}

}  // namespace

RowSpec BaseSpec(const Options &opt, uint64_t io_size) {
  RowSpec s;
  s.xfer = opt.xfer;
  s.op = opt.op;
  s.file = opt.file;
  s.file_size = opt.file_size;
  s.io_size = io_size;
  s.threads = opt.threads;
  s.odirect = opt.odirect;
  s.register_buffers = opt.register_buffers;
  s.batch = opt.batch;
  s.lib = opt.lib;
  return s;
}

int RunCompare(const Options &opt, const Gpu &gpu, const ReportContext &ctx) {
  int rc = 0;
  for (uint64_t io : opt.io_sizes) rc |= CompareOne(opt, gpu, ctx, io);
  return rc;
}

}  // namespace bench
