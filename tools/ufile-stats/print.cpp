// SPDX-License-Identifier: Apache-2.0
// Prints the values cuFileGetStatsL3 would return in the process (the same
// FillLevel3), so the tool and the API never disagree.
#include "print.h"

#include <time.h>

#include <cinttypes>
#include <ctime>
#include <string>

namespace ufile::tools {
namespace {

double MiB(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

std::string Uuid(const char (&b)[CUFILE_GPU_UUID_LEN]) {
  const auto *u = reinterpret_cast<const unsigned char *>(b);
  char text[64];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return text;
}

std::string Clock(uint64_t unix_ns) {
  const time_t secs = static_cast<time_t>(unix_ns / 1000000000u);
  struct tm tm;
  localtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

void PrintOp(std::FILE *out, const char *name, const CUfileOpCounter_t &c) {
  std::fprintf(out, "  %-24s ok %-12" PRIu64 " err %" PRIu64 "\n", name, c.ok, c.err);
}

// One direction of the global counters, with the rate of the last interval.
void PrintDirection(std::FILE *out, const char *name, const CUfileOpCounter_t &ops, uint64_t bytes,
                    uint64_t bw, uint64_t ops_s, uint64_t lat_avg, uint64_t lat_sum,
                    uint64_t prev_bytes, double interval_s) {
  std::fprintf(out,
               "  %-6s ok %" PRIu64 " err %" PRIu64 "  bytes %" PRIu64
               " (%.2f MiB)  bw %.2f MiB/s"
               "  ops/s %" PRIu64 "  latency avg %" PRIu64 " us, sum %" PRIu64 " us",
               name, ops.ok, ops.err, bytes, MiB(bytes), MiB(bw), ops_s, lat_avg, lat_sum);
  if (interval_s > 0) std::fprintf(out, "  now %.2f MiB/s", MiB(bytes - prev_bytes) / interval_s);
  std::fprintf(out, "\n");
}

void PrintGlobal(std::FILE *out, const CUfileStatsLevel1_t &s, const CUfileStatsLevel1_t *p,
                 double interval_s) {
  std::fprintf(out, "GLOBAL\n");
  PrintDirection(out, "Read", s.read_ops, s.read_bytes, s.read_bw_bytes_per_sec, s.read_ops_per_sec,
                 s.read_lat_avg_us, s.read_lat_sum_us, p ? p->read_bytes : 0, p ? interval_s : 0);
  PrintDirection(out, "Write", s.write_ops, s.write_bytes, s.write_bw_bytes_per_sec,
                 s.write_ops_per_sec, s.write_lat_avg_us, s.write_lat_sum_us,
                 p ? p->write_bytes : 0, p ? interval_s : 0);
  PrintOp(out, "HandleRegister", s.hdl_register_ops);
  PrintOp(out, "HandleDeregister", s.hdl_deregister_ops);
  PrintOp(out, "BufRegister", s.buf_register_ops);
  PrintOp(out, "BufDeregister", s.buf_deregister_ops);
}

void PrintBatch(std::FILE *out, const CUfileStatsLevel1_t &s) {
  const uint64_t any = s.batch_setup_ops.ok + s.batch_setup_ops.err + s.batch_submit_ops.ok +
                       s.batch_submit_ops.err + s.batch_processed_ops.ok;
  if (!any) {
    std::fprintf(out, "BATCH  (no batch operations)\n");
    return;
  }
  std::fprintf(out, "BATCH\n");
  PrintOp(out, "Setup", s.batch_setup_ops);
  PrintOp(out, "Submit", s.batch_submit_ops);
  PrintOp(out, "GetStatus", s.batch_complete_ops);
  PrintOp(out, "Cancel", s.batch_cancel_ops);
  PrintOp(out, "Destroy", s.batch_destroy_ops);
  PrintOp(out, "Enqueued", s.batch_enqueued_ops);
  PrintOp(out, "PosixEnqueued", s.batch_posix_enqueued_ops);
  PrintOp(out, "Processed", s.batch_processed_ops);
  PrintOp(out, "PosixProcessed", s.batch_posix_processed_ops);
  PrintOp(out, "IouringSubmit", s.batch_iouring_submit_ops);
  PrintOp(out, "MixedIoSubmit", s.batch_mixed_io_submit_ops);
  PrintOp(out, "TotalSubmit", s.batch_total_submit_ops);
  std::fprintf(out,
               "  Bytes read %" PRIu64 " (%.2f MiB/s)  written %" PRIu64
               " (%.2f MiB/s)"
               "  last batch read %" PRIu64 " written %" PRIu64 "\n",
               s.batch_read_bytes, MiB(s.batch_read_bw_bytes), s.batch_write_bytes,
               MiB(s.batch_write_bw_bytes), s.last_batch_read_bytes, s.last_batch_write_bytes);
  std::fprintf(out,
               "  Latency submit avg %" PRIu64 " us, completion avg %" PRIu64
               " us  submits/s %" PRIu64 "  completions/s %" PRIu64 "\n",
               s.batch_submit_lat_avg_us, s.batch_completion_lat_avg_us, s.batch_submit_ops_per_sec,
               s.batch_complete_ops_per_sec);
}

void PrintHistogram(std::FILE *out, const CUfileStatsLevel2_t &s) {
  std::fprintf(out, "SIZE HISTOGRAM\n  %-24s %-12s %s\n", "KiB", "reads", "writes");
  bool any = false;
  for (int b = 0; b < 32; ++b) {
    if (!s.read_size_kb_hist[b] && !s.write_size_kb_hist[b]) continue;
    any = true;
    char range[40];
    if (b == 0)
      std::snprintf(range, sizeof range, "[0, 1)");
    else if (b == 31)
      std::snprintf(range, sizeof range, "[%llu, inf)", 1ULL << 30);
    else
      std::snprintf(range, sizeof range, "[%llu, %llu)", 1ULL << (b - 1), 1ULL << b);
    std::fprintf(out, "  %-24s %-12" PRIu64 " %" PRIu64 "\n", range, s.read_size_kb_hist[b],
                 s.write_size_kb_hist[b]);
  }
  if (!any) std::fprintf(out, "  (empty)\n");
}

void PrintGpuDir(std::FILE *out, const char *name, uint64_t bytes, uint64_t bw, uint64_t util,
                 uint64_t n, uint64_t posix, uint64_t unaligned, uint64_t err, uint64_t us) {
  std::fprintf(out,
               "    %-5s n %" PRIu64 " err %" PRIu64 " bytes %" PRIu64
               " (%.2f MiB) bw %.2f MiB/s"
               " util %" PRIu64 "%% posix %" PRIu64 " unaligned %" PRIu64 " busy %" PRIu64 " us\n",
               name, n, err, bytes, MiB(bytes), MiB(bw), util, posix, unaligned, us);
}

void PrintGpus(std::FILE *out, const CUfileStatsLevel3_t &s) {
  std::fprintf(out, "PER GPU (%u GPUs)\n", s.num_gpus);
  for (uint32_t g = 0; g < s.num_gpus && g < 16; ++g) {
    const CUfilePerGpuStats_t &r = s.per_gpu_stats[g];
    std::fprintf(out, "  GPU %u %s  registered %" PRIu64 " bytes\n", g, Uuid(r.uuid).c_str(),
                 r.reg_bytes);
    PrintGpuDir(out, "Read", r.read_bytes, r.read_bw_bytes_per_sec, r.read_utilization,
                r.n_total_reads, r.n_posix_reads, r.n_unaligned_reads, r.n_reads_err,
                r.read_duration_us);
    PrintGpuDir(out, "Write", r.writes_bytes, r.write_bw_bytes_per_sec, r.write_utilization,
                r.n_total_writes, r.n_posix_writes, r.n_unaligned_writes, r.n_writes_err,
                r.write_duration_us);
  }
}

// The program name as the segment holds it, any byte outside printable
// ASCII shown as '?': a name is the process's to choose (prctl) and must not
// move the terminal.
std::string Printable(const std::string &comm) {
  std::string out = comm;
  for (char &c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return out;
}

}  // namespace

void PrintSample(std::FILE *out, const stats::Sample &s, int level, const stats::Sample *prev,
                 double interval_s) {
  CUfileStatsLevel3_t now, before;
  stats::FillLevel3(s.totals, &now);
  if (prev) stats::FillLevel3(prev->totals, &before);
  const int shown = level < static_cast<int>(s.totals.level) ? level : s.totals.level;
  std::fprintf(out, "ufile-stats: pid %d (%s)  level %u%s  since %s\n", s.pid, Printable(s.comm).c_str(),
               s.totals.level, s.totals.running ? "" : " (stopped)",
               Clock(s.reset_unix_ns).c_str());
  if (shown < level)
    std::fprintf(out, "note: level %d asked for, the process collects level %u\n", level,
                 s.totals.level);
  const CUfileStatsLevel1_t &l1 = now.detailed.basic;
  PrintGlobal(out, l1, prev ? &before.detailed.basic : nullptr, interval_s);
  PrintBatch(out, l1);
  if (shown >= 2) PrintHistogram(out, now.detailed);
  if (shown >= 3) PrintGpus(out, now);
  std::fflush(out);
}

}  // namespace ufile::tools
