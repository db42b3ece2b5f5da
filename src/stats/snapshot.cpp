// SPDX-License-Identifier: Apache-2.0
#include "stats/snapshot.h"

#include <algorithm>
#include <cstring>

namespace ufile::stats {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

void MinNonZero(uint64_t &acc, uint64_t v) {
  if (v && (!acc || v < acc)) acc = v;
}

void SumGpu(const GpuDir &g, GpuTotals &t) {
  t.bytes += g.bytes.load(kRelaxed);
  t.ops += g.ops.load(kRelaxed);
  t.errors += g.errors.load(kRelaxed);
  t.posix += g.posix.load(kRelaxed);
  t.unaligned += g.unaligned.load(kRelaxed);
  t.busy_ns += g.busy_ns.load(kRelaxed);
  MinNonZero(t.first_ns, g.first_ns.load(kRelaxed));
  t.last_ns = std::max(t.last_ns, g.last_ns.load(kRelaxed));
}

void SumShard(const Shard &s, Totals &t) {
  for (int op = 0; op < kNumOps; ++op)
    for (int e = 0; e < 2; ++e) t.ops[op][e] += s.ops[op][e].load(kRelaxed);
  for (int k = 0; k < kNumKinds; ++k) {
    t.bytes[k] += s.bytes[k].load(kRelaxed);
    MinNonZero(t.first_ns[k], s.first_ns[k].load(kRelaxed));
    t.last_ns[k] = std::max(t.last_ns[k], s.last_ns[k].load(kRelaxed));
  }
  for (int l = 0; l < kNumLats; ++l) t.lat_ns[l] += s.lat_ns[l].load(kRelaxed);
  for (int d = 0; d < 2; ++d)
    for (int b = 0; b < kHistBuckets; ++b) t.hist[d][b] += s.hist[d][b].load(kRelaxed);
  for (int g = 0; g < kMaxGpus; ++g)
    for (int d = 0; d < 2; ++d) SumGpu(s.gpu[g][d], t.gpu[g][d]);
}

CUfileOpCounter_t Pair(const Totals &t, Op op) {
  return {t.ops[op][0], t.ops[op][1]};
}

uint64_t Avg(uint64_t sum, uint64_t n) {
  return n ? sum / n : 0;
}

// Where one direction's totals go in CUfilePerGpuStats_t.
struct GpuDirFields {
  uint64_t CUfilePerGpuStats_t::*bytes, CUfilePerGpuStats_t::*bw, CUfilePerGpuStats_t::*util,
      CUfilePerGpuStats_t::*duration_us, CUfilePerGpuStats_t::*total, CUfilePerGpuStats_t::*posix,
      CUfilePerGpuStats_t::*unaligned, CUfilePerGpuStats_t::*errors;
};
using S = CUfilePerGpuStats_t;
constexpr GpuDirFields kGpuRead{
    &S::read_bytes,    &S::read_bw_bytes_per_sec, &S::read_utilization,  &S::read_duration_us,
    &S::n_total_reads, &S::n_posix_reads,         &S::n_unaligned_reads, &S::n_reads_err};
constexpr GpuDirFields kGpuWrite{
    &S::writes_bytes,   &S::write_bw_bytes_per_sec, &S::write_utilization,  &S::write_duration_us,
    &S::n_total_writes, &S::n_posix_writes,         &S::n_unaligned_writes, &S::n_writes_err};

void FillGpuDir(const GpuTotals &x, const GpuDirFields &f, CUfilePerGpuStats_t *out) {
  const uint64_t window = x.last_ns > x.first_ns ? x.last_ns - x.first_ns : 0;
  out->*f.bytes = x.bytes;
  out->*f.bw = PerSecond(x.bytes, x.first_ns, x.last_ns);
  out->*f.util = window ? std::min<uint64_t>(100, x.busy_ns * 100 / window) : 0;
  out->*f.duration_us = x.busy_ns / 1000;
  out->*f.total = x.ops;
  out->*f.posix = x.posix;
  out->*f.unaligned = x.unaligned;
  out->*f.errors = x.errors;
}

void FillGpu(const Totals &t, int g, CUfilePerGpuStats_t *out) {
  std::memset(out, 0, sizeof *out);
  if (t.uuid_set[g]) std::memcpy(out->uuid, t.uuid[g], sizeof out->uuid);
  FillGpuDir(t.gpu[g][0], kGpuRead, out);
  FillGpuDir(t.gpu[g][1], kGpuWrite, out);
  out->reg_bytes = t.reg_bytes[g];
}

}  // namespace

uint64_t PerSecond(uint64_t amount, uint64_t first_ns, uint64_t last_ns) {
  if (!first_ns || last_ns <= first_ns) return 0;
  return static_cast<uint64_t>(static_cast<double>(amount) * 1e9 /
                               static_cast<double>(last_ns - first_ns));
}

Totals Sum(const Segment &seg) {
  Totals t;
  const Header &h = seg.header;
  t.level = h.level.load(kRelaxed);
  t.running = h.running.load(kRelaxed) != 0;
  t.num_gpus = std::min<uint32_t>(h.num_gpus.load(kRelaxed), kMaxGpus);
  for (int d = 0; d < 2; ++d) t.last_batch_bytes[d] = h.last_batch_bytes[d].load(kRelaxed);
  for (int g = 0; g < kMaxGpus; ++g) {
    t.reg_bytes[g] = h.reg_bytes[g].load(kRelaxed);
    t.uuid_set[g] = h.uuid_set[g].load(std::memory_order_acquire) != 0;
    if (t.uuid_set[g]) std::memcpy(t.uuid[g], h.uuid[g], 16);
  }
  for (const Shard &s : seg.shard) SumShard(s, t);
  return t;
}

void FillLevel1(const Totals &t, CUfileStatsLevel1_t *out) {
  std::memset(out, 0, sizeof *out);
  // In Op order.
  CUfileOpCounter_t *const fields[kNumOps] = {&out->read_ops,
                                              &out->write_ops,
                                              &out->hdl_register_ops,
                                              &out->hdl_deregister_ops,
                                              &out->buf_register_ops,
                                              &out->buf_deregister_ops,
                                              &out->batch_submit_ops,
                                              &out->batch_complete_ops,
                                              &out->batch_setup_ops,
                                              &out->batch_cancel_ops,
                                              &out->batch_destroy_ops,
                                              &out->batch_enqueued_ops,
                                              &out->batch_posix_enqueued_ops,
                                              &out->batch_processed_ops,
                                              &out->batch_posix_processed_ops,
                                              &out->batch_nvfs_submit_ops,
                                              &out->batch_p2p_submit_ops,
                                              &out->batch_aio_submit_ops,
                                              &out->batch_iouring_submit_ops,
                                              &out->batch_mixed_io_submit_ops,
                                              &out->batch_total_submit_ops};
  for (int op = 0; op < kNumOps; ++op) *fields[op] = Pair(t, static_cast<Op>(op));

  // n over the window of requests of kind, per second.
  auto rate = [&t](uint64_t n, int kind) { return PerSecond(n, t.first_ns[kind], t.last_ns[kind]); };
  out->read_bytes = t.bytes[kKindRead];
  out->write_bytes = t.bytes[kKindWrite];
  out->read_bw_bytes_per_sec = rate(t.bytes[kKindRead], kKindRead);
  out->write_bw_bytes_per_sec = rate(t.bytes[kKindWrite], kKindWrite);
  out->read_lat_sum_us = t.lat_ns[kLatRead] / 1000;
  out->write_lat_sum_us = t.lat_ns[kLatWrite] / 1000;
  out->read_lat_avg_us = Avg(t.lat_ns[kLatRead], t.ops[kRead][0]) / 1000;
  out->write_lat_avg_us = Avg(t.lat_ns[kLatWrite], t.ops[kWrite][0]) / 1000;
  out->read_ops_per_sec = rate(t.ops[kRead][0], kKindRead);
  out->write_ops_per_sec = rate(t.ops[kWrite][0], kKindWrite);

  // Batch windows: reads and writes of batches together.
  uint64_t bfirst = 0;
  MinNonZero(bfirst, t.first_ns[kKindBatchRead]);
  MinNonZero(bfirst, t.first_ns[kKindBatchWrite]);
  const uint64_t blast = std::max(t.last_ns[kKindBatchRead], t.last_ns[kKindBatchWrite]);
  out->batch_read_bytes = t.bytes[kKindBatchRead];
  out->batch_write_bytes = t.bytes[kKindBatchWrite];
  out->batch_read_bw_bytes = rate(t.bytes[kKindBatchRead], kKindBatchRead);
  out->batch_write_bw_bytes = rate(t.bytes[kKindBatchWrite], kKindBatchWrite);
  out->batch_submit_lat_sum_us = t.lat_ns[kLatBatchSubmit] / 1000;
  out->batch_completion_lat_sum_us = t.lat_ns[kLatBatchCompletion] / 1000;
  out->batch_submit_lat_avg_us = Avg(t.lat_ns[kLatBatchSubmit], t.ops[kBatchSubmit][0]) / 1000;
  out->batch_completion_lat_avg_us =
      Avg(t.lat_ns[kLatBatchCompletion], t.ops[kBatchProcessed][0] + t.ops[kBatchProcessed][1]) /
      1000;
  out->batch_submit_ops_per_sec = PerSecond(t.ops[kBatchSubmit][0], bfirst, blast);
  out->batch_complete_ops_per_sec = PerSecond(t.ops[kBatchProcessed][0], bfirst, blast);
  out->last_batch_read_bytes = t.last_batch_bytes[0];
  out->last_batch_write_bytes = t.last_batch_bytes[1];
}

void FillLevel2(const Totals &t, CUfileStatsLevel2_t *out) {
  FillLevel1(t, &out->basic);
  for (int b = 0; b < kHistBuckets; ++b) {
    out->read_size_kb_hist[b] = t.hist[0][b];
    out->write_size_kb_hist[b] = t.hist[1][b];
  }
}

void FillLevel3(const Totals &t, CUfileStatsLevel3_t *out) {
  FillLevel2(t, &out->detailed);
  out->num_gpus = t.num_gpus;
  for (int g = 0; g < kMaxGpus; ++g) FillGpu(t, g, &out->per_gpu_stats[g]);
}

}  // namespace ufile::stats
