// SPDX-License-Identifier: Apache-2.0
// -x device and -x device-chase (xfer_device.h).
#include "xfer_device.h"

#include <cufile.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "compare.h"
#include "measure.h"
#include "testfile.h"
#include "ufile/device.h"
#include "xfer_device_kernels.h"

namespace bench {
namespace {

struct DevSpec {
  uint32_t queues = 8;
  uint32_t depth = 0;    // 0: enough for every group's requests in flight
  uint64_t staging = 0;  // 0: the I/O size, at most 1 MiB (block mode)
  uint32_t groups = 0;   // blocks; 0: 2 a queue
  uint32_t threads = 0;  // per block; 0: 256 (block mode), 128 (warp mode)
  int mode = -1;         // -1: warp for <= 64 KiB random reads/writes, else block
  uint32_t options = UFILE_DEVIO_OPT_DEFAULT;
  uint32_t sq_threads = 0;
  int sq_cpu = -1;
  uint32_t idle_ms = 1000;
  uint32_t poll_ns = 0;
  uint32_t timeout_ms = 30000;  // a device wait's bound
  uint32_t proxy_threads = 0;
  bool nocpu = true, proxy = true;
  uint32_t qd1_threads = 256;
  bool probe = false;
  bool ll = false;         // also a QD1 row on the proxy path with LL lines (UFILE_DEVIO_OPT_LL)
  bool ll_staged = false;  // ... and/or with LL staged (UFILE_DEVIO_OPT_LL | _LL_STAGED)
  bool trace = false;  // also the phases of a QD1 LL read
};

bool ParseU32(const std::string &s, uint32_t *out) {
  char *end = nullptr;
  const unsigned long v = std::strtoul(s.c_str(), &end, 10);
  if (s.empty() || *end || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

bool ParseOpts(const std::string &s, uint32_t *out) {
  static const std::map<std::string, uint32_t> kNames = {
      {"templates", UFILE_DEVIO_OPT_TEMPLATES}, {"fixed", UFILE_DEVIO_OPT_FIXED_BUFFERS},
      {"narrow", UFILE_DEVIO_OPT_NARROW_COPY},  {"ll", UFILE_DEVIO_OPT_LL},
      {"llstaged", UFILE_DEVIO_OPT_LL_STAGED},
      {"none", 0}};
  *out = 0;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t plus = s.find('+', pos);
    const std::string name = s.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
    auto it = kNames.find(name);
    if (it == kNames.end()) return false;
    *out |= it->second;
    if (plus == std::string::npos) break;
    pos = plus + 1;
  }
  return true;
}


bool ApplyKey(const std::string &k, const std::string &v, DevSpec *d) {
  uint64_t size = 0;
  if (k == "queues") return ParseU32(v, &d->queues) && d->queues > 0;
  if (k == "depth") return ParseU32(v, &d->depth);
  if (k == "staging") return ParseSize(v, &size) && (d->staging = size, true);
  if (k == "groups") return ParseU32(v, &d->groups);
  if (k == "threads") return ParseU32(v, &d->threads) && d->threads % 32 == 0;
  if (k == "mode") return (v == "block" || v == "warp") && (d->mode = v == "warp", true);
  if (k == "opts") return ParseOpts(v, &d->options);
  if (k == "sqthreads") return ParseU32(v, &d->sq_threads);
  if (k == "sqcpu") return (d->sq_cpu = std::atoi(v.c_str()), true);
  if (k == "idle") return ParseU32(v, &d->idle_ms);
  if (k == "poll") return ParseU32(v, &d->poll_ns);
  if (k == "timeout") return ParseU32(v, &d->timeout_ms) && d->timeout_ms > 0;
  if (k == "proxythreads") return ParseU32(v, &d->proxy_threads);
  if (k == "qd1threads") return ParseU32(v, &d->qd1_threads) && d->qd1_threads % 32 == 0;
  if (k == "probe") return (d->probe = v == "1", true);
  if (k == "ll") {
    d->ll = v == "1" || v == "lines" || v == "both";
    d->ll_staged = v == "staged" || v == "both";
    return d->ll || d->ll_staged || v == "0";
  }
  if (k == "trace") return (d->trace = v == "1", true);
  if (k == "paths") {
    d->nocpu = v == "both" || v == "nocpu";
    d->proxy = v == "both" || v == "proxy";
    return d->nocpu || d->proxy;
  }
  return false;
}

bool ParseDevSpec(const std::string &text, DevSpec *d, std::string *bad) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string kv = text.substr(pos, comma - pos);
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || !ApplyKey(kv.substr(0, eq), kv.substr(eq + 1), d)) {
      *bad = kv;
      return false;
    }
    pos = comma + 1;
  }
  return true;
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// The bench file opened and registered with ufile.
class DevFile {
 public:
  ~DevFile() {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
  }
  Status Open(const std::string &path, bool direct) {
    fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0));
    if (fd_ < 0) return ErrnoFail(path.c_str(), errno);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    const CUfileError_t e = cuFileHandleRegister(&fh_, &d);
    if (e.err != CU_FILE_SUCCESS) return Fail("cuFileHandleRegister: error %d", e.err);
    return {};
  }
  CUfileHandle_t handle() const { return fh_; }

 private:
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
};

uint32_t Pow2AtLeast(uint64_t v) {
  uint32_t p = 1;
  while (p < v && p < 4096) p <<= 1;
  return p;
}

// The loop and set shapes a row uses.
struct Shape {
  devk::LoopArgs args;
  ufile_devio_params_t params{};
};

Shape ShapeFor(const Options &opt, const DevSpec &d, uint64_t io, uint32_t path, bool qd1) {
  Shape s;
  devk::LoopArgs &a = s.args;
  const bool small = io <= 64 * 1024;
  a.mode = (!qd1 && (d.mode == 1 || (d.mode < 0 && small && opt.is_random())))
               ? devk::Mode::kWarp
               : devk::Mode::kBlock;
  a.write = opt.is_write();
  a.random = opt.is_random();
  a.verify = opt.verify;
  a.io_size = io;
  a.span = opt.file_size / io * io;
  const bool warp = a.mode == devk::Mode::kWarp;
  a.threads = qd1 ? d.qd1_threads : d.threads ? d.threads : (warp ? 128 : 256);
  a.groups = qd1 ? 1 : (d.groups ? d.groups : 2 * d.queues);
  a.lat_samples = (!warp && small) ? 200000 / a.groups + 1 : 0;
  ufile_devio_params_t &p = s.params;
  ufile_devio_params_init(&p);
  p.path = path;
  p.num_queues = qd1 ? 1 : d.queues;
  p.staging_bytes = d.staging ? d.staging : (warp ? io : std::min<uint64_t>(io, 1 << 20));
  const uint64_t per_queue = (a.groups + p.num_queues - 1) / p.num_queues;
  const uint64_t inflight = warp ? per_queue * (a.threads) : per_queue * 8;
  p.queue_depth = d.depth ? d.depth : Pow2AtLeast(std::max<uint64_t>(inflight, 2));
  p.options = d.options;
  p.sq_threads = d.sq_threads;
  p.sq_cpu = d.sq_cpu;
  p.sq_idle_ms = d.idle_ms;
  p.poll_ns = d.poll_ns;
  p.proxy_threads = d.proxy_threads;
  p.timeout_us = uint64_t{d.timeout_ms} * 1000;
  return s;
}

std::string OptionText(uint32_t o) {
  std::string t;
  if (o & UFILE_DEVIO_OPT_TEMPLATES) t += "+templates";
  if (o & UFILE_DEVIO_OPT_FIXED_BUFFERS) t += "+fixed";
  if (o & UFILE_DEVIO_OPT_NARROW_COPY) t += "+narrow";
  if (o & UFILE_DEVIO_OPT_LL) t += "+ll";
  if (o & UFILE_DEVIO_OPT_LL_STAGED) t += "+llstaged";
  return t.empty() ? "none" : t.substr(1);
}

std::string StatsText(const ufile_devio_stats_t &st) {
  char buf[200];
  std::snprintf(
      buf, sizeof buf,
      "submitted %llu, reaped %llu, timeouts %llu, stale %llu, resubmits %llu, cq flushes %llu",
      static_cast<unsigned long long>(st.submitted), static_cast<unsigned long long>(st.reaped),
      static_cast<unsigned long long>(st.timeouts), static_cast<unsigned long long>(st.stale),
      static_cast<unsigned long long>(st.resubmits),
      static_cast<unsigned long long>(st.cq_flushes));
  return buf;
}

std::string Setting(const Shape &s, double cores, const ufile_devio_stats_t &st) {
  const ufile_devio_params_t &p = s.params;
  std::string opts = OptionText(p.options);
  if (st.wakeups) opts += ", " + std::to_string(st.wakeups) + " wakeups";
  if (st.cq_flushes) opts += ", " + std::to_string(st.cq_flushes) + " cq flushes";
  char buf[256];
  std::snprintf(buf, sizeof buf, "cores %.2f; %s %ux%u, q%u d%u s%s, %s, sq-threads %u", cores,
                s.args.mode == devk::Mode::kWarp ? "warps" : "blocks", s.args.groups,
                s.args.threads, p.num_queues, p.queue_depth, SizeText(p.staging_bytes).c_str(),
                opts.c_str(), p.sq_threads ? p.sq_threads : p.num_queues);
  std::string out = buf;
  if (st.timeouts) out += ", " + std::to_string(st.timeouts) + " timeouts";
  return out;
}

// One device row: set up, warm up, the timed runs.
// ll: 0, UFILE_DEVIO_OPT_LL, or UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED.
RowResult DeviceRow(const Options &opt, const DevSpec &d, uint64_t io, uint32_t path, bool qd1,
                    uint32_t ll = 0) {
  RowResult row;
  row.spec = BaseSpec(opt, io);
  row.spec.threads = 1;
  row.type = std::string(qd1 ? "qd1-" : "dev-") + ufile_devio_path_name(static_cast<int>(path)) +
             (!ll ? "" : (ll & UFILE_DEVIO_OPT_LL_STAGED) ? "-llst" : "-ll");
  row.cache = opt.cold ? "cold" : "hot";
  Shape s = ShapeFor(opt, d, io, path, qd1);
  s.params.options |= ll;
  DevFile file;
  Status st = file.Open(opt.file, opt.odirect);
  if (!st.ok()) return row.error = st.error, row;
  CUfileHandle_t h = file.handle();
  ufile::DeviceQueues q;
  const int rc = q.Create(&h, 1, &s.params);
  if (rc < 0) return row.error = "ufile_devio_create: " + std::string(strerror(-rc)), row;
  if (ll && !(q.view().options & UFILE_DEVIO_OPT_LL)) return row.error = "LL not in force", row;
  if (q.path() != static_cast<int>(path)) {
    char why[256] = {};
    ufile_devio_probe(why, sizeof why);
    return row.error = std::string("no-CPU path unavailable: ") + why, row;
  }
  const ufile_devio_view_t v = q.view();
  std::string err;
  devk::LoopArgs warm = s.args;
  warm.total_ios = s.args.groups * 4ull;
  warm.lat_samples = 0;
  warm.verify = 0;
  devk::LoopResult wr;
  if (devk::RunLoop(v, warm, &wr, &err) != 0) return row.error = err, row;
  std::vector<Sample> samples;
  std::vector<double> cores;
  bool mismatch = false;
  for (int r = 0; r < opt.effective_repeats(); ++r) {
    if (opt.cold) {
      std::string how;
      Status dc = DropCache(opt.file, &how);
      if (!dc.ok()) return row.error = dc.error, row;
      row.cache = "cold (" + how + ")";
    }
    devk::LoopArgs a = s.args;
    a.seconds_ns = static_cast<uint64_t>(opt.seconds * 1e9);
    devk::LoopResult lr;
    const double c0 = CpuSeconds();
    if (devk::RunLoop(v, a, &lr, &err) != 0) return row.error = err, row;
    Sample smp;
    smp.cpu_seconds = CpuSeconds() - c0;
    smp.seconds = lr.seconds;
    smp.bytes = lr.bytes;
    smp.ios = lr.ios;
    smp.lat_ns = std::move(lr.lat_ns);
    samples.push_back(std::move(smp));
    cores.push_back(lr.seconds > 0 ? samples.back().cpu_seconds / lr.seconds : NAN);
    mismatch |= lr.mismatches > 0;
    if (lr.errors) {
      const ufile_devio_stats_t qs = q.stats();
      return row.error = std::to_string(lr.errors) +
                         " requests failed, first: " + std::to_string(lr.first_error) +
                         " (set: " + StatsText(qs) + ")",
             row;
    }
  }
  Summarize(samples, &row);
  std::sort(cores.begin(), cores.end());
  row.verified = !opt.verify ? Verified::kNotAsked : mismatch ? Verified::kFailed : Verified::kOk;
  row.setting = Setting(s, cores[cores.size() / 2], q.stats());
  if (d.trace && qd1 && ll) {
    std::vector<std::pair<std::string, double>> ph;
    if (devk::RunTraceLL(v, s.args, 2000, &ph, &err) == 0) {
      std::printf("\nQD1 LL read phases (median of 2000, ns from the call; %s):\n",
                  row.type.c_str());
      for (auto &[name, ns] : ph) std::printf("  %-44s %8.0f\n", name.c_str(), ns);
    } else {
      std::printf("trace failed: %s\n", err.c_str());
    }
  }
  return row;
}

MeasurePlan PlanOf(const Options &opt) {
  MeasurePlan mp;
  mp.repeats = opt.effective_repeats();
  mp.seconds = opt.seconds;
  mp.cold = opt.cold;
  mp.verify = opt.verify ? VerifyMode::kPass : VerifyMode::kNone;
  mp.verify_bytes = opt.verify_bytes;
  return mp;
}

RowResult Baseline(const Options &opt, const Gpu &gpu, uint64_t io, Xfer x, int threads) {
  RowSpec s = BaseSpec(opt, io);
  s.xfer = x;
  s.threads = threads;
  MeasurePlan mp = PlanOf(opt);
  if (x == Xfer::kPinnedCopy) {
    mp.cold = false;
    if (!s.random()) {
      s.threads = 1;
      s.io_size = std::min<uint64_t>(s.file_size, 1ull << 30);
    }
  }
  RowResult r = MeasureRow(s, gpu, mp);
  if (!std::isnan(r.gbps) && !std::isnan(r.cpu_s_per_gb))
    r.setting = "cores " + std::to_string(r.cpu_s_per_gb * r.gbps).substr(0, 4) + "; " + r.setting;
  return r;
}

void Ratio(const RowResult *base, RowResult *r) {
  if (!base || !base->error.empty() || std::isnan(base->gbps) || std::isnan(r->gbps) || base->gbps <= 0) return;
  r->ratio = r->gbps / base->gbps;
  r->ceiling = base->type;
}

void Verdict(const ReportContext &ctx, const char *what, double value, double target, bool higher,
             const char *unit) {
  if (ctx.json || std::isnan(value)) return;
  const bool met = higher ? value >= target : value <= target;
  std::printf("target %s %s %.3g %s: %.3g (%s)\n", what, higher ? ">=" : "<=", target, unit, value,
              met ? "met" : "not met");
}

int DeviceTable(const Options &opt, const Gpu &gpu, const ReportContext &ctx, const DevSpec &d,
                uint64_t io) {
  const RowSpec spec = BaseSpec(opt, io);
  PrintTableHeader(ctx, spec, opt.effective_repeats(), opt.cold ? "cold" : "hot",
                   "ufile-bench -x device");
  const RowResult *ceiling = nullptr;
  std::vector<RowResult> base;
  base.reserve(4);
  if (opt.compare) {
    if (!opt.is_write() && !opt.cold)
      base.push_back(Baseline(opt, gpu, io, Xfer::kPinnedCopy, opt.threads));
    if (opt.cold || (opt.odirect && !opt.is_write()))
      base.push_back(Baseline(opt, gpu, io, Xfer::kRaw, std::max(opt.threads, 16)));
    base.push_back(Baseline(opt, gpu, io, Xfer::kUfile, opt.threads));
    ceiling = opt.is_write() ? &base.back() : &base.front();
    for (RowResult &r : base) {
      Ratio(ceiling, &r);
      PrintRow(ctx, r);
    }
  }
  int rc = 0;
  double best_gbps = NAN, best_iops = NAN;
  std::string best_path;  // the row the targets are judged on: no-CPU, else proxy
  for (uint32_t path : {UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY}) {
    if ((path == UFILE_DEVIO_PATH_NOCPU && !d.nocpu) || (path == UFILE_DEVIO_PATH_PROXY && !d.proxy))
      continue;
    RowResult r = DeviceRow(opt, d, io, path, false);
    Ratio(ceiling, &r);
    PrintRow(ctx, r);
    if (!r.error.empty() || r.verified == Verified::kFailed) rc = 1;
    if (path == UFILE_DEVIO_PATH_NOCPU || std::isnan(best_gbps)) {
      best_gbps = r.gbps;
      best_iops = r.iops;
      best_path = path == UFILE_DEVIO_PATH_NOCPU ? " (no-CPU)" : " (proxy)";
    }
  }
  if (!opt.is_write() && io <= 64 * 1024) {
    RowResult host_qd1;
    const RowResult *qd1_base = nullptr;
    if (opt.compare) {
      host_qd1 = Baseline(opt, gpu, io, Xfer::kUfile, 1);
      host_qd1.type = "qd1-ufile";
      PrintRow(ctx, host_qd1);
      qd1_base = &host_qd1;
    }
    for (uint32_t path : {UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY}) {
      if ((path == UFILE_DEVIO_PATH_NOCPU && !d.nocpu) ||
          (path == UFILE_DEVIO_PATH_PROXY && !d.proxy))
        continue;
      RowResult r = DeviceRow(opt, d, io, path, true);
      Ratio(qd1_base, &r);
      PrintRow(ctx, r);
      if (path == UFILE_DEVIO_PATH_NOCPU && io == 4096)
        Verdict(ctx, "QD1 4 KiB p50 (no-CPU)", r.p50_us, 5, false, "us");
      for (uint32_t ll : {UFILE_DEVIO_OPT_LL, UFILE_DEVIO_OPT_LL | UFILE_DEVIO_OPT_LL_STAGED}) {
        const bool staged = ll & UFILE_DEVIO_OPT_LL_STAGED;
        if (path != UFILE_DEVIO_PATH_PROXY || !(staged ? d.ll_staged : d.ll)) continue;
        RowResult l = DeviceRow(opt, d, io, path, true, ll);
        Ratio(qd1_base, &l);
        PrintRow(ctx, l);
        if (io == 4096)
          Verdict(ctx, staged ? "QD1 4 KiB p50 (proxy, LL staged)" : "QD1 4 KiB p50 (proxy, LL lines)",
                  l.p50_us, 5, false, "us");
      }
    }
  }
  if (opt.compare && io == 4096 && opt.is_random() && !opt.is_write())
    Verdict(ctx, ("4 KiB random reads/s" + best_path).c_str(), best_iops, 2e6, true, "/s");
  if (opt.compare && !opt.is_write() && !opt.cold && io >= (1u << 20))
    Verdict(ctx, ("sequential GB/s" + best_path).c_str(), best_gbps, 45, true, "GB/s");
  if (opt.compare && ceiling && !std::isnan(ceiling->gbps)) {
    if (opt.is_write())
      Verdict(ctx, ("writes vs host ufile" + best_path).c_str(), best_gbps / ceiling->gbps, 0.85,
              true, "x");
    else if (opt.cold)
      Verdict(ctx, ("cold reads vs raw O_DIRECT" + best_path).c_str(), best_gbps / ceiling->gbps,
              0.95, true, "x");
  }
  if (opt.verify && opt.is_write() && !ctx.json) {
    Status st = ReadBack(opt.file, opt.file_size, 16);
    std::printf("read back after the device writes: %s\n", st.ok() ? "pattern intact" : st.error.c_str());
    if (!st.ok()) rc = 1;
  }
  return rc;
}

// --devio probe=1: the primitives' latencies, on a one-queue no-CPU set of
// a scratch file.
void Probe(const DevSpec &d) {
  (void)d;
  const std::string path = "/tmp/ufile-bench-probe.dat";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, 1 << 20) != 0) return;
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  if (cuFileHandleRegister(&fh, &descr).err == CU_FILE_SUCCESS) {
    ufile_devio_params_t p;
    ufile_devio_params_init(&p);
    p.num_queues = 1;
    p.queue_depth = 8;
    p.staging_bytes = 65536;
    ufile::DeviceQueues q;
    std::vector<std::pair<std::string, double>> out;
    std::string err;
    if (q.Create(&fh, 1, &p) == 0 && devk::RunProbe(q.view(), &out, &err) == 0) {
      std::printf("\nprimitive latencies (ns, median-free mean of 200, one thread):\n");
      for (auto &[name, ns] : out) std::printf("  %-40s %8.0f\n", name.c_str(), ns);
    } else {
      std::printf("probe failed: %s\n", err.c_str());
    }
    cuFileHandleDeregister(fh);
  }
  close(fd);
  unlink(path.c_str());
}

}  // namespace

int RunDevice(const Options &opt, const Gpu &gpu, const ReportContext &ctx) {
  if (!devk::Built() || !gpu.present) {
    std::fprintf(stderr, "ufile-bench: -x device needs %s\n",
                 gpu.present ? "a ufile-bench built with nvcc (this one has no kernels)"
                             : "a GPU");
    return 1;
  }
  DevSpec d;
  std::string bad;
  if (!ParseDevSpec(opt.devio, &d, &bad)) {
    std::fprintf(stderr, "ufile-bench: bad --devio item '%s'\n", bad.c_str());
    return 2;
  }
  if (d.probe) Probe(d);
  int rc = 0;
  for (uint64_t io : opt.io_sizes) rc |= DeviceTable(opt, gpu, ctx, d, io);
  return rc;
}

}  // namespace bench
