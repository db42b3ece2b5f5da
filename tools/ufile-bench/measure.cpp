// SPDX-License-Identifier: Apache-2.0
#include "measure.h"

#include <algorithm>

#include "testfile.h"

namespace bench {
namespace {

using Workers = std::vector<std::unique_ptr<Worker>>;

Status MakeWorkers(const RowSpec &spec, Transfer &xfer, Workers *workers) {
  for (int t = 0; t < spec.threads; ++t) {
    std::unique_ptr<Worker> w;
    Status st = xfer.NewWorker(t, &w);
    if (!st.ok()) return st;
    workers->push_back(std::move(w));
  }
  return {};
}

std::string Label(const RowSpec &spec, int run, int runs) {
  return std::string(XferName(spec.xfer)) + " " + OpName(spec.op) + " " + SizeText(spec.io_size) +
         " x" + std::to_string(spec.threads) + " (" + std::to_string(run) + "/" +
         std::to_string(runs) + ")";
}

// One untimed request a worker: first-use costs (a library's lazily built
// pools, page faults, CUDA module loads) stay out of the first timed run.
Status WarmUp(const RowSpec &spec, const Gpu &gpu, const MeasurePlan &mp, Transfer &xfer,
              Workers &workers) {
  const bool inline_verify = mp.verify == VerifyMode::kInline;
  if (spec.write() && !inline_verify) MarkDirty(spec.file);
  RunPlan plan;
  plan.total_reqs = workers.size() * xfer.group();
  plan.span = spec.file_size;
  plan.verify = inline_verify;  // writes then write the pattern, not stale data
  return RunOnce(spec, gpu, xfer, workers, plan).status;
}

// The timed runs; their samples, or the first error.
Status TimedRuns(const RowSpec &spec, const Gpu &gpu, const MeasurePlan &mp, Transfer &xfer,
                 Workers &workers, RowResult *row, std::vector<Sample> *samples) {
  const uint64_t blocks = spec.file_size / spec.io_size;
  for (int r = 0; r < mp.repeats; ++r) {
    if (mp.cold) {
      std::string how;
      Status st = DropCache(spec.file, &how);
      if (!st.ok()) return st;
      row->cache = "cold (" + how + ")";
    }
    if (spec.write() && mp.verify != VerifyMode::kInline) MarkDirty(spec.file);
    RunPlan plan;
    plan.seconds = mp.seconds;
    plan.total_reqs = mp.passes * blocks;
    plan.span = spec.file_size;
    plan.verify = mp.verify == VerifyMode::kInline;
    plan.progress = mp.progress;
    plan.thread_cpu = mp.thread_cpu;
    plan.label = Label(spec, r + 1, mp.repeats);
    Sample s = RunOnce(spec, gpu, xfer, workers, plan);
    if (!s.status.ok()) return s.status;
    samples->push_back(std::move(s));
  }
  return {};
}

// The check pass of --compare -V: sequential, the first verify_bytes.
Status CheckPass(const RowSpec &spec, const Gpu &gpu, const MeasurePlan &mp, Transfer &xfer,
                 Workers &workers, uint64_t *covered) {
  RowSpec seq = spec;
  seq.op = spec.write() ? Op::kWrite : Op::kRead;
  const uint64_t want = std::min(mp.verify_bytes, spec.file_size);
  RunPlan plan;
  plan.total_reqs = std::max<uint64_t>(1, want / spec.io_size);
  plan.span = spec.file_size;
  plan.verify = true;
  plan.progress = mp.progress;
  plan.label = std::string(XferName(spec.xfer)) + " verify";
  Sample s = RunOnce(seq, gpu, xfer, workers, plan);
  *covered = plan.total_reqs * spec.io_size;
  return s.status;
}

// Whether the data the row moved is right; sets row->verified.
void Verify(const RowSpec &spec, const Gpu &gpu, const MeasurePlan &mp, Transfer &xfer,
            Workers &workers, RowResult *row) {
  if (mp.verify == VerifyMode::kNone) return;
  if (!xfer.moves_file_data()) {
    row->verified = Verified::kNotApplicable;
    return;
  }
  uint64_t covered = spec.file_size;  // inline writes may have touched any block
  Status st;
  if (mp.verify == VerifyMode::kPass) st = CheckPass(spec, gpu, mp, xfer, workers, &covered);
  if (st.ok() && spec.write()) st = ReadBack(spec.file, covered, spec.threads);
  row->verified = st.ok() ? Verified::kOk : Verified::kFailed;
  if (!st.ok()) row->error = st.error;
}

}  // namespace

RowResult MeasureRow(const RowSpec &spec, const Gpu &gpu, const MeasurePlan &mp) {
  RowResult row;
  row.spec = spec;
  row.type = XferName(spec.xfer);
  row.cache = mp.cold ? "cold" : "hot";
  if (spec.io_size == 0 || spec.io_size > spec.file_size) {
    row.error = "the I/O size " + SizeText(spec.io_size) + " exceeds the file (" +
                SizeText(spec.file_size) + ")";
    return row;
  }
  // Declared first: destroyed last, after the workers that use it.
  std::unique_ptr<Transfer> xfer = MakeTransfer(spec.xfer);
  Workers workers;
  Status st = xfer->Setup(spec, gpu);
  BindThread(gpu);  // whatever a library's open did to this thread's context
  if (st.ok()) st = MakeWorkers(spec, *xfer, &workers);
  row.setting = xfer->setting();
  std::vector<Sample> samples;
  if (st.ok()) st = WarmUp(spec, gpu, mp, *xfer, workers);
  if (st.ok()) st = TimedRuns(spec, gpu, mp, *xfer, workers, &row, &samples);
  if (!st.ok()) {
    row.error = st.error;
    if (st.error.find("verify failed") != std::string::npos) row.verified = Verified::kFailed;
    return row;
  }
  Summarize(samples, &row);
  if (mp.verify == VerifyMode::kInline && !spec.write() && xfer->moves_file_data())
    row.verified = Verified::kOk;  // every read was checked, none failed
  else
    Verify(spec, gpu, mp, *xfer, workers, &row);
  return row;
}

}  // namespace bench
