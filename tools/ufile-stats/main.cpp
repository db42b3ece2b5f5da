// SPDX-License-Identifier: Apache-2.0
// ufile-stats -p PID [-l LEVEL] [-i SECONDS] [-n COUNT]
// Prints the cuFile statistics a process running ufile publishes in
// /dev/shm/ufile-stats-PID (while its statistics level is above 0).
// Exit status: 0 printed; 1 nothing published (no such process, or its
// level is 0); 2 usage, as for the other tools; 3 stale segment of a dead process; 4 another user's;
// 5 not a segment this ufile-stats can read (another layout version, or a
// segment another process published).
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
               "  -n COUNT    stop after COUNT samples\n"
               "  -h, --help  this text\n"
               "exit status: 0 printed; 1 nothing published; 2 usage; 3 stale segment;\n"
               "  4 another user's segment; 5 a segment this ufile-stats cannot read\n");
}

bool ParseInt(const char *text, long min, long max, long *out) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno || !end || *end || end == text || v < min || v > max) return false;
  *out = v;
  return true;
}

// A refused option value, named before the usage.
std::nullopt_t Bad(char opt, const char *value, const char *want) {
  std::fprintf(stderr, "ufile-stats: -%c '%s': %s\n", opt, value, want);
  return std::nullopt;
}

const option kLong[] = {{"help", no_argument, nullptr, 'h'}, {nullptr, 0, nullptr, 0}};

// The options; nullopt after naming what is wrong, or with *help set for
// -h and --help.
std::optional<Options> Parse(int argc, char **argv, bool *help) {
  Options o;
  long v = 0;
  int c;
  opterr = 0;  // unknown options and missing values are reported below
  while ((c = getopt_long(argc, argv, ":p:l:i:n:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'p':
        if (!ParseInt(optarg, 1, 0x7fffffff, &v)) return Bad('p', optarg, "not a process id");
        o.pid = static_cast<int>(v);
        break;
      case 'l':
        if (!ParseInt(optarg, 1, 3, &v)) return Bad('l', optarg, "the level is 1, 2 or 3");
        o.level = static_cast<int>(v);
        break;
      case 'i': {
        char *end = nullptr;
        o.interval_s = std::strtod(optarg, &end);
        if (!end || *end || !(o.interval_s > 0) || !std::isfinite(o.interval_s))
          return Bad('i', optarg, "a number of seconds above 0");
        break;
      }
      case 'n':
        if (!ParseInt(optarg, 1, 1L << 40, &v)) return Bad('n', optarg, "a count of 1 or more");
        o.count = v;
        break;
      case 'h':
        *help = true;
        return std::nullopt;
      case ':':
        std::fprintf(stderr, "ufile-stats: -%c needs a value\n", optopt);
        return std::nullopt;
      case '?':
        // optopt is 0 for an unknown long option: name the word given.
        if (optopt)
          std::fprintf(stderr, "ufile-stats: unknown option -%c\n", optopt);
        else
          std::fprintf(stderr, "ufile-stats: unknown option %s\n", argv[optind - 1]);
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }
  if (optind != argc) {
    std::fprintf(stderr, "ufile-stats: unexpected argument '%s'\n", argv[optind]);
    return std::nullopt;
  }
  if (o.pid == 0) {
    std::fprintf(stderr, "ufile-stats: -p PID is required\n");
    return std::nullopt;
  }
  if (o.count < 0) o.count = o.interval_s > 0 ? -1 : 1;
  return o;
}

int ExitCode(Sample::Kind kind) {
  switch (kind) {
    case Sample::Kind::kOk:
      return 0;
    case Sample::Kind::kAbsent:
      return 1;
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

// A sample of pid's segment. A segment is created empty and then sized and
// filled, so one being (re)published reads as too small or not yet a
// segment for a moment: such a read is retried for up to 200 ms before it
// is reported. A segment whose header names another process (a copy, or
// one left by a process of another pid namespace) is refused.
Sample Read(int pid) {
  Sample s = ufile::stats::ReadSample(pid);
  for (int i = 0; i < 20 && s.kind == Sample::Kind::kInvalid; ++i) {
    Sleep(0.01);
    s = ufile::stats::ReadSample(pid);
  }
  if (s.kind == Sample::Kind::kOk && s.pid != pid) {
    s.detail = "/dev/shm/ufile-stats-" + std::to_string(pid) + " names process " +
               std::to_string(s.pid) + ", not " + std::to_string(pid) +
               ": it was not published by that process";
    s.kind = Sample::Kind::kInvalid;
  }
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  bool help = false;
  std::optional<Options> opt = Parse(argc, argv, &help);
  if (help) {
    Usage(stdout);
    return 0;
  }
  if (!opt) {
    Usage(stderr);
    return 2;
  }
  std::optional<Sample> prev;
  for (long n = 0; opt->count < 0 || n < opt->count; ++n) {
    if (n > 0) Sleep(opt->interval_s);
    Sample s = Read(opt->pid);
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
