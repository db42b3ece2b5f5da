// SPDX-License-Identifier: Apache-2.0
// -x device-chase: the dependent-offset demonstration. The file's 4 KiB
// blocks are nodes of a linked structure: the next node is a function of
// every byte of the node just read (XOR of its 512 words, hashed), so no
// request can be issued before the previous one's data has been processed.
// W walkers each follow `steps` nodes from their own start.
//   device-driven: one warp a walker reads each node through a ufile queue
//     set (ufile/device.cuh) and computes the next offset itself;
//   host-driven, two ways: per step, host threads cuFileRead every walker's
//     node into device memory, or pread it into pinned memory followed by one
//     copy; one kernel computes every next offset into host-mapped memory;
//     the host waits (spinning) and reads them (the round trip). The device
//     rows' speedup is against the faster of the two.
// Both run in the same process on the same file; their final offsets must
// agree, and walker 0's chain is checked against the pattern on the CPU.
#include <cufile.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "pattern.h"
#include "ufile/device.h"
#include "xfer_device.h"
#include "xfer_device_kernels.h"

namespace bench {
namespace {

double Cpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

struct ChaseRow {
  std::string driver;  // "device (nocpu)", "host-driven"
  uint32_t walkers = 0;
  uint32_t steps = 0;
  double seconds = 0;
  double cores = 0;
  std::vector<uint64_t> final;
  std::string error;
};

struct Knobs {
  std::vector<uint32_t> walkers = {1, 64};
  uint32_t steps = 2000;
  uint32_t queues = 0;      // 0: one a walker, up to 64
  uint32_t sq_threads = 0;  // 0: one a queue, up to 12
  uint32_t idle_ms = 1000;
  uint32_t poll_ns = 0;  // back-off between a waiting walker's polls
  bool nocpu = true, proxy = true;
};

bool ParseKnobs(const std::string &text, Knobs *k, std::string *bad) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string kv = text.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t eq = kv.find('=');
    const std::string key = kv.substr(0, eq), val = eq == std::string::npos ? "" : kv.substr(eq + 1);
    const long n = std::atol(val.c_str());
    if (key == "walkers") {
      k->walkers.clear();
      for (size_t p = 0; p <= val.size();) {
        const size_t plus = val.find('+', p);
        const long w = std::atol(val.substr(p, plus == std::string::npos ? std::string::npos : plus - p).c_str());
        if (w <= 0) return *bad = kv, false;
        k->walkers.push_back(static_cast<uint32_t>(w));
        if (plus == std::string::npos) break;
        p = plus + 1;
      }
    } else if (key == "steps" && n > 0) {
      k->steps = static_cast<uint32_t>(n);
    } else if (key == "queues" && n > 0) {
      k->queues = static_cast<uint32_t>(n);
    } else if (key == "sqthreads" && n >= 0) {
      k->sq_threads = static_cast<uint32_t>(n);
    } else if (key == "idle" && n > 0) {
      k->idle_ms = static_cast<uint32_t>(n);
    } else if (key == "poll" && n >= 0) {
      k->poll_ns = static_cast<uint32_t>(n);
    } else if (key == "paths" && (val == "both" || val == "nocpu" || val == "proxy")) {
      k->nocpu = val != "proxy";
      k->proxy = val != "nocpu";
    } else {
      return *bad = kv, false;
    }
  }
  return true;
}

ChaseRow DeviceChase(CUfileHandle_t fh, const Knobs &k, uint32_t walkers, uint64_t nodes,
                     uint32_t path) {
  ChaseRow row;
  row.driver = std::string("device (") + ufile_devio_path_name(static_cast<int>(path)) + ")";
  row.walkers = walkers;
  row.steps = k.steps;
  ufile_devio_params_t p;
  ufile_devio_params_init(&p);
  p.path = path;
  p.num_queues = std::min(walkers, k.queues ? k.queues : 64u);
  uint32_t depth = 1;
  while (depth < (walkers + p.num_queues - 1) / p.num_queues) depth <<= 1;
  p.queue_depth = std::max<uint32_t>(depth, 2);
  p.staging_bytes = 4096;
  p.sq_threads = k.sq_threads ? k.sq_threads : std::min(p.num_queues, 12u);
  p.sq_idle_ms = k.idle_ms;
  p.poll_ns = k.poll_ns;
  ufile::DeviceQueues q;
  const int rc = q.Create(&fh, 1, &p);
  if (rc < 0) return row.error = std::string("ufile_devio_create: ") + strerror(-rc), row;
  if (q.path() != static_cast<int>(path)) return row.error = "path unavailable here", row;
  std::string err;
  std::vector<uint64_t> warm(walkers);
  double s = 0;
  if (devk::RunChaseDevice(q.view(), walkers, 4, nodes, warm.data(), &s, &err) != 0)
    return row.error = err, row;
  row.final.resize(walkers);
  const double c0 = Cpu();
  const uint64_t t0 = NowNs();
  if (devk::RunChaseDevice(q.view(), walkers, k.steps, nodes, row.final.data(), &s, &err) != 0)
    return row.error = err, row;
  row.seconds = static_cast<double>(NowNs() - t0) * 1e-9;
  row.cores = (Cpu() - c0) / row.seconds;
  return row;
}

// Host threads read every walker's node, with cuFileRead into device memory
// or with pread into pinned memory (then one copy); the barrier's completion
// step runs the kernel and takes the next offsets.
ChaseRow HostChase(CUfileHandle_t fh, int fd, bool use_pread, const Knobs &k, uint32_t walkers,
                   uint64_t nodes) {
  ChaseRow row;
  row.driver = use_pread ? "host (pread)" : "host (cuFileRead)";
  row.walkers = walkers;
  row.steps = k.steps;
  devk::ChaseStep step;
  std::string err;
  if (step.Init(walkers, &err) != 0) return row.error = err, row;
  CUfileError_t reg{CU_FILE_INVALID_VALUE, CUDA_SUCCESS};
  if (!use_pread) reg = cuFileBufRegister(step.nodes(), walkers * 4096ull, 0);
  std::vector<uint64_t> off(walkers);
  for (uint32_t w = 0; w < walkers; ++w) off[w] = devk::ChaseStart(w, nodes);
  const uint32_t nthreads = std::min<uint32_t>(walkers, 16);
  std::string failure;
  auto after_reads = [&]() noexcept {
    if (!failure.empty()) return;
    std::string e;
    if (step.Step(nodes, use_pread, &e) != 0) failure = e;
    for (uint32_t w = 0; w < walkers; ++w) off[w] = step.next()[w];
  };
  std::barrier sync(static_cast<std::ptrdiff_t>(nthreads), after_reads);
  auto work = [&](uint32_t t) {
    for (uint32_t s = 0; s < k.steps; ++s) {
      for (uint32_t w = t; w < walkers; w += nthreads) {
        const ssize_t n =
            use_pread ? pread(fd, step.pinned() + 4096ull * w, 4096, static_cast<off_t>(off[w]))
                      : cuFileRead(fh, step.nodes() + 4096ull * w, 4096, static_cast<off_t>(off[w]), 0);
        if (n != 4096 && failure.empty())
          failure = std::string(use_pread ? "pread: " : "cuFileRead: ") + std::to_string(n);
      }
      sync.arrive_and_wait();
    }
  };
  const double c0 = Cpu();
  const uint64_t t0 = NowNs();
  std::vector<std::thread> threads;
  for (uint32_t t = 1; t < nthreads; ++t) threads.emplace_back(work, t);
  work(0);
  for (auto &th : threads) th.join();
  row.seconds = static_cast<double>(NowNs() - t0) * 1e-9;
  row.cores = (Cpu() - c0) / row.seconds;
  if (reg.err == CU_FILE_SUCCESS) cuFileBufDeregister(step.nodes());
  if (!failure.empty()) return row.error = failure, row;
  row.final = off;
  return row;
}

// Walker 0's chain from the pattern itself (what the file holds).
uint64_t ReferenceEnd(uint64_t nodes, uint32_t steps) {
  uint64_t off = devk::ChaseStart(0, nodes);
  std::vector<uint64_t> words(512);
  for (uint32_t s = 0; s < steps; ++s) {
    FillPattern(off, words.data(), 4096);
    off = devk::ChaseNext(words.data(), nodes);
  }
  return off;
}

void Print(const ReportContext &ctx, const ChaseRow &r, const ChaseRow *host, const char *check) {
  const double per_step = r.seconds / r.steps * 1e6;
  const double rate = static_cast<double>(r.walkers) * r.steps / r.seconds;
  const double speedup = host && host->error.empty() && r.error.empty() ? host->seconds / r.seconds : NAN;
  if (ctx.json || ctx.json_out) {
    nlohmann::json j;
    j["type"] = "device-chase";
    j["driver"] = r.driver;
    j["walkers"] = r.walkers;
    j["steps"] = r.steps;
    j["seconds"] = r.seconds;
    j["us_per_step"] = per_step;
    j["nodes_per_s"] = rate;
    j["cores"] = r.cores;
    if (!std::isnan(speedup)) j["speedup_vs_host"] = speedup;
    j["verified"] = check;
    j["error"] = r.error.empty() ? nlohmann::json() : nlohmann::json(r.error);
    j["date"] = ctx.date;
    j["host"] = ctx.host;
    if (ctx.json) std::printf("%s\n", j.dump().c_str());
    if (ctx.json_out) std::fprintf(ctx.json_out, "%s\n", j.dump().c_str());
  }
  if (ctx.json) return;
  if (!r.error.empty()) {
    std::printf("%-18s %7u  failed: %s\n", r.driver.c_str(), r.walkers, r.error.c_str());
    return;
  }
  std::printf("%-18s %7u %6u %9.3f %10.2f %12.0f %6.2f %8.2f  %s\n", r.driver.c_str(), r.walkers,
              r.steps, r.seconds, per_step, rate, r.cores, speedup, check);
}

}  // namespace

int RunDeviceChase(const Options &opt, const Gpu &gpu, const ReportContext &ctx) {
  if (!devk::Built() || !gpu.present) {
    std::fprintf(stderr, "ufile-bench: -x device-chase needs %s\n",
                 gpu.present ? "a ufile-bench built with nvcc (this one has no kernels)"
                             : "a GPU");
    return 1;
  }
  Knobs k;
  std::string bad;
  if (!ParseKnobs(opt.devio, &k, &bad)) {
    std::fprintf(stderr, "ufile-bench: bad --devio item '%s'\n", bad.c_str());
    return 2;
  }
  const int fd = open(opt.file.c_str(), O_RDONLY | O_CLOEXEC | (opt.odirect ? O_DIRECT : 0));
  if (fd < 0) return std::perror(opt.file.c_str()), 1;
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  if (cuFileHandleRegister(&fh, &descr).err != CU_FILE_SUCCESS) {
    close(fd);
    std::fprintf(stderr, "ufile-bench: cuFileHandleRegister failed\n");
    return 1;
  }
  const uint64_t nodes = opt.file_size / 4096;
  const uint64_t ref = ReferenceEnd(nodes, k.steps);
  if (!ctx.json)
    std::printf("\nufile-bench -x device-chase: %s (%llu nodes of 4 KiB), %s, %s on %s\n"
                "%-18s %7s %6s %9s %10s %12s %6s %8s  %s\n",
                opt.file.c_str(), static_cast<unsigned long long>(nodes), ctx.gpu.c_str(),
                ctx.date.c_str(), ctx.host.c_str(), "driver", "walkers", "steps", "seconds",
                "us/step", "nodes/s", "cores", "speedup", "check");
  int rc = 0;
  for (uint32_t w : k.walkers) {
    // The host-driven loops: the faster one is what the device rows beat.
    const ChaseRow via_cufile = HostChase(fh, fd, false, k, w, nodes);
    const ChaseRow via_pread = HostChase(fh, fd, true, k, w, nodes);
    for (const ChaseRow *h : {&via_cufile, &via_pread}) {
      const bool ok = h->error.empty() && h->final[0] == ref;
      Print(ctx, *h, nullptr, h->error.empty() ? (ok ? "walker 0 = pattern" : "WRONG") : "-");
      rc |= !ok;
    }
    const ChaseRow &host =
        !via_pread.error.empty() || (via_cufile.error.empty() && via_cufile.seconds < via_pread.seconds)
            ? via_cufile
            : via_pread;
    for (uint32_t path : {UFILE_DEVIO_PATH_NOCPU, UFILE_DEVIO_PATH_PROXY}) {
      if ((path == UFILE_DEVIO_PATH_NOCPU && !k.nocpu) || (path == UFILE_DEVIO_PATH_PROXY && !k.proxy))
        continue;
      const ChaseRow dev = DeviceChase(fh, k, w, nodes, path);
      const bool same = dev.error.empty() && host.error.empty() && dev.final == host.final;
      Print(ctx, dev, &host, dev.error.empty() ? (same ? "= host-driven" : "DIFFERS") : "-");
      rc |= !same;
    }
  }
  cuFileHandleDeregister(fh);
  close(fd);
  return rc;
}

}  // namespace bench
