// SPDX-License-Identifier: Apache-2.0
// ufile-stats -p PID [-l LEVEL] [-i SECONDS] [-n COUNT]
// Prints the cuFile statistics a process running ufile publishes in
// /dev/shm/ufile-stats-PID (while its statistics level is above 0).
// Exit status: 0 printed; 1 usage; 2 nothing published (no such process,
// or its level is 0); 3 stale segment of a dead process; 4 another user's;
// 5 not a segment this ufile-stats can read.
#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>

#include "print.h"

using ufile::stats::Sample;

namespace {

struct Options {
  int pid = 0;
  int level = 3;          // detail shown; capped by the process's level
  double interval_s = 0;  // 0: one sample
  long count = -1;        // samples; -1: 1 without -i, unlimited with it
};

void Usage(std::FILE *out) {
  std::fprintf(out,
               "usage: ufile-stats -p PID [-l LEVEL] [-i SECONDS] [-n COUNT]\n"
               "  -p PID      process to read (it must run ufile with a statistics level > 0)\n"
               "  -l LEVEL    detail: 1 counters, 2 + size histogram, 3 + per-GPU rows"
               " (default 3, capped by the process's level)\n"
               "  -i SECONDS  print every SECONDS (fractions allowed) until the process ends\n"
               "  -n COUNT    stop after COUNT samples\n");
}

bool ParseInt(const char *text, long min, long max, long *out) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno || !end || *end || end == text || v < min || v > max) return false;
  *out = v;
  return true;
}

std::optional<Options> Parse(int argc, char **argv) {
  Options o;
  long v = 0;
  int c;
  while ((c = getopt(argc, argv, "p:l:i:n:h")) != -1) {
    switch (c) {
      case 'p':
        if (!ParseInt(optarg, 1, 0x7fffffff, &v)) return std::nullopt;
        o.pid = static_cast<int>(v);
        break;
      case 'l':
        if (!ParseInt(optarg, 1, 3, &v)) return std::nullopt;
        o.level = static_cast<int>(v);
        break;
      case 'i': {
        char *end = nullptr;
        o.interval_s = std::strtod(optarg, &end);
        if (!end || *end || !(o.interval_s > 0) || !std::isfinite(o.interval_s))
          return std::nullopt;
        break;
      }
      case 'n':
        if (!ParseInt(optarg, 1, 1L << 40, &v)) return std::nullopt;
        o.count = v;
        break;
      default:
        return std::nullopt;
    }
  }
  if (optind != argc || o.pid == 0) return std::nullopt;
  if (o.count < 0) o.count = o.interval_s > 0 ? -1 : 1;
  return o;
}

int ExitCode(Sample::Kind kind) {
  switch (kind) {
    case Sample::Kind::kOk:
      return 0;
    case Sample::Kind::kAbsent:
      return 2;
    case Sample::Kind::kStale:
      return 3;
    case Sample::Kind::kDenied:
      return 4;
    case Sample::Kind::kInvalid:
      return 5;
  }
  return 5;
}

void Sleep(double seconds) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(seconds);
  ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

int main(int argc, char **argv) {
  std::optional<Options> opt = Parse(argc, argv);
  if (!opt) {
    Usage(stderr);
    return 1;
  }
  std::optional<Sample> prev;
  for (long n = 0; opt->count < 0 || n < opt->count; ++n) {
    if (n > 0) Sleep(opt->interval_s);
    Sample s = ufile::stats::ReadSample(opt->pid);
    if (s.kind != Sample::Kind::kOk) {
      if (n > 0 && s.kind == Sample::Kind::kAbsent) {
        std::printf(
            "ufile-stats: process %d no longer publishes statistics (it ended, closed "
            "the driver or set level 0)\n",
            opt->pid);
        return 0;
      }
      std::fprintf(stderr, "ufile-stats: %s\n", s.detail.c_str());
      return ExitCode(s.kind);
    }
    if (n > 0) std::printf("\n");
    ufile::tools::PrintSample(stdout, s, opt->level, prev ? &*prev : nullptr, opt->interval_s);
    prev = std::move(s);
  }
  return 0;
}
