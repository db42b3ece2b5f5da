// SPDX-License-Identifier: Apache-2.0
#include "runner.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "pattern.h"
#include "thread_cpu.h"

namespace bench {
namespace {

// Hands out requests: a shared counter walks the file in I/O-size steps
// (sequential), or each thread draws I/O-size-aligned offsets uniformly.
class Offsets {
 public:
  Offsets(const RowSpec &spec, const RunPlan &plan)
      : io_(spec.io_size),
        blocks_(plan.span / spec.io_size),
        random_(spec.random()),
        total_(plan.total_reqs) {}

  size_t Next(uint64_t &rng, Req *out, size_t n) {
    const uint64_t first = next_.fetch_add(n, std::memory_order_relaxed);
    if (total_) {
      if (first >= total_) return 0;
      n = static_cast<size_t>(std::min<uint64_t>(n, total_ - first));
    }
    for (size_t i = 0; i < n; ++i) {
      uint64_t block = random_ ? Uniform(rng) : (first + i) % blocks_;
      out[i] = Req{block * io_, static_cast<size_t>(io_), i};
    }
    return n;
  }

 private:
  uint64_t Uniform(uint64_t &s) {  // xorshift64*, then a multiply to [0, blocks)
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    uint64_t r = s * 0x2545f4914f6cdd1dull;
    return static_cast<uint64_t>((static_cast<__uint128_t>(r) * blocks_) >> 64);
  }

  const uint64_t io_, blocks_;
  const bool random_;
  const uint64_t total_;
  std::atomic<uint64_t> next_{0};
};

struct Shared {
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;  // guarded by mu
  std::atomic<uint64_t> bytes{0};
  uint64_t deadline_ns = 0;  // 0: count-limited
};

struct ThreadOut {
  uint64_t bytes = 0, ios = 0, end_ns = 0, checked = 0;
  std::vector<uint32_t> lat;
  Status status;
};

constexpr size_t kScratch = 64u << 20;  // device data is checked in pieces this big
constexpr size_t kMaxLatSamples = 1u << 22;

// Puts the pattern of each request's range into its slot.
Status FillSlots(Worker &w, const Req *reqs, size_t n, std::vector<char> &scratch) {
  for (size_t i = 0; i < n; ++i) {
    char *dst = w.SlotData(reqs[i].slot);
    if (!dst) return {};
    if (!w.SlotOnDevice()) {
      FillPattern(reqs[i].off, dst, reqs[i].len);
      continue;
    }
    for (size_t done = 0; done < reqs[i].len; done += kScratch) {
      size_t piece = std::min(kScratch, reqs[i].len - done);
      scratch.resize(std::max(scratch.size(), piece));
      FillPattern(reqs[i].off + done, scratch.data(), piece);
      Status st = CopyFromHost(dst + done, scratch.data(), piece, true);
      if (!st.ok()) return st;
    }
  }
  return {};
}

// Checks each request's slot against the pattern; counts checked bytes.
Status CheckSlots(Worker &w, const Req *reqs, size_t n, std::vector<char> &scratch,
                  uint64_t *checked) {
  for (size_t i = 0; i < n; ++i) {
    const char *src = w.SlotData(reqs[i].slot);
    if (!src) return {};
    for (size_t done = 0; done < reqs[i].len; done += kScratch) {
      size_t piece = std::min(kScratch, reqs[i].len - done);
      const char *host = src + done;
      if (w.SlotOnDevice()) {
        scratch.resize(std::max(scratch.size(), piece));
        Status st = CopyToHost(scratch.data(), src + done, piece, true);
        if (!st.ok()) return st;
        host = scratch.data();
      }
      uint64_t bad = 0;
      if (!CheckPattern(reqs[i].off + done, host, piece, &bad))
        return Fail(
            "verify failed: byte at file offset %llu differs from the pattern "
            "(request of %zu at %llu; %s)",
            static_cast<unsigned long long>(bad), reqs[i].len,
            static_cast<unsigned long long>(reqs[i].off),
            DescribeMismatch(reqs[i].off + done, host, piece).c_str());
      *checked += piece;
    }
  }
  return {};
}

void ThreadMain(const RowSpec &spec, const Gpu &gpu, const RunPlan &plan, Transfer &xfer, Worker &w,
                Offsets &offs, Shared &sh, int t, ThreadOut &out) {
  BindThread(gpu);
  std::vector<Req> reqs(xfer.group());
  std::vector<char> scratch;
  uint64_t rng = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(t + 1);
  const bool lat = spec.io_size <= kLatencyMaxIo;
  if (lat)
    out.lat.reserve(plan.total_reqs ? std::min<uint64_t>(plan.total_reqs, 1u << 16) : 1u << 16);
  sh.go.wait(false);
  while (!sh.stop.load(std::memory_order_relaxed)) {
    const size_t n = offs.Next(rng, reqs.data(), reqs.size());
    if (n == 0) break;
    if (plan.verify && spec.write()) out.status = FillSlots(w, reqs.data(), n, scratch);
    const uint64_t t0 = NowNs();
    if (out.status.ok()) out.status = w.Run(reqs.data(), n);
    const uint64_t t1 = NowNs();
    if (out.status.ok() && plan.verify && !spec.write())
      out.status = CheckSlots(w, reqs.data(), n, scratch, &out.checked);
    if (!out.status.ok()) {
      sh.stop = true;
      break;
    }
    if (lat && out.lat.size() < kMaxLatSamples)
      out.lat.push_back(static_cast<uint32_t>(std::min<uint64_t>(t1 - t0, UINT32_MAX)));
    uint64_t b = 0;
    for (size_t i = 0; i < n; ++i) b += reqs[i].len;
    out.bytes += b;
    out.ios += n;
    sh.bytes.fetch_add(b, std::memory_order_relaxed);
    if (sh.deadline_ns && t1 >= sh.deadline_ns) break;
  }
  out.end_ns = NowNs();
  std::lock_guard<std::mutex> lock(sh.mu);
  ++sh.done;
  sh.cv.notify_all();
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

// Waits for the workers, drawing a status line on a terminal.
void WaitWithProgress(const RunPlan &plan, Shared &sh, int nthreads, uint64_t start) {
  bool drawn = false;
  std::unique_lock<std::mutex> lock(sh.mu);
  while (sh.done < nthreads) {
    sh.cv.wait_for(lock, std::chrono::milliseconds(250));
    const double el = static_cast<double>(NowNs() - start) * 1e-9;
    if (!plan.progress || el < 1.0) continue;
    std::fprintf(stderr, "\r  %-44s %6.1f s %9.2f GB/s ", plan.label.c_str(), el,
                 static_cast<double>(sh.bytes.load()) / el * 1e-9);
    drawn = true;
  }
  if (drawn) std::fputs("\r\033[K", stderr);
}

}  // namespace

Sample RunOnce(const RowSpec &spec, const Gpu &gpu, Transfer &xfer,
               std::vector<std::unique_ptr<Worker>> &workers, const RunPlan &plan) {
  Sample s;
  Offsets offs(spec, plan);
  Shared sh;
  const int n = static_cast<int>(workers.size());
  std::vector<ThreadOut> outs(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back(ThreadMain, std::cref(spec), std::cref(gpu), std::cref(plan),
                         std::ref(xfer), std::ref(*workers[t]), std::ref(offs), std::ref(sh), t,
                         std::ref(outs[t]));
  const ThreadTimes threads0 = plan.thread_cpu ? SnapshotThreads() : ThreadTimes{};
  const double cpu0 = CpuSeconds();
  const uint64_t start = NowNs();
  if (!plan.total_reqs) sh.deadline_ns = start + static_cast<uint64_t>(plan.seconds * 1e9);
  sh.go = true;
  sh.go.notify_all();
  WaitWithProgress(plan, sh, n, start);
  for (auto &th : threads) th.join();
  s.cpu_seconds = CpuSeconds() - cpu0;
  if (plan.thread_cpu)
    std::fprintf(stderr, "  %s: CPU by thread: %s\n", plan.label.c_str(),
                 DescribeThreadCpu(threads0, SnapshotThreads(), s.cpu_seconds).c_str());
  uint64_t end = start;
  for (auto &o : outs) {
    end = std::max(end, o.end_ns);
    s.bytes += o.bytes;
    s.ios += o.ios;
    s.checked_bytes += o.checked;
    s.lat_ns.insert(s.lat_ns.end(), o.lat.begin(), o.lat.end());
    if (s.status.ok() && !o.status.ok()) s.status = o.status;
  }
  s.seconds = static_cast<double>(end - start) * 1e-9;
  return s;
}

Status ReadBack(const std::string &path, uint64_t len, int nthreads) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return ErrnoFail(path.c_str(), errno);
  constexpr uint64_t kPiece = 16ull << 20;
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Status first;
  auto work = [&] {
    std::vector<char> buf(kPiece);
    for (uint64_t off = next.fetch_add(kPiece); off < len; off = next.fetch_add(kPiece)) {
      const size_t want = static_cast<size_t>(std::min(kPiece, len - off));
      Status st;
      uint64_t bad = 0;
      if (pread(fd, buf.data(), want, static_cast<off_t>(off)) != static_cast<ssize_t>(want))
        st = Fail("read back: short read or error at offset %llu",
                  static_cast<unsigned long long>(off));
      else if (!CheckPattern(off, buf.data(), want, &bad))
        st = Fail("read back after the writes: byte at offset %llu differs from the pattern "
                  "(%s)",
                  static_cast<unsigned long long>(bad), DescribeMismatch(off, buf.data(), want).c_str());
      if (st.ok()) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (first.ok()) first = st;
      return;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::clamp(nthreads, 1, 16); ++t) pool.emplace_back(work);
  for (auto &th : pool) th.join();
  close(fd);
  return first;
}

}  // namespace bench
