// SPDX-License-Identifier: Apache-2.0
#include "options.h"

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace bench {
namespace {

const char kUsage[] =
    "usage: ufile-bench [options]\n"
    "  -f FILE         file to read or write (created, filled with the pattern, if absent)\n"
    "  -D DIR          use DIR/ufile-bench.dat\n"
    "  -d GPU          GPU index; -1: host memory (default 0; host when there is no GPU)\n"
    "  -w THREADS      worker threads (default 1)\n"
    "  -s SIZE         file size (default: the file's, or 1G for a new file)\n"
    "  -i SIZE         I/O size, or MIN:MAX:STEP (STEP a size to add or xN to multiply):\n"
    "                  one row (with --compare one table) per size (default 1M)\n"
    "  -x TYPE         ufile | cpu | naive | pinned-copy | raw | nvidia | batch | async\n"
    "                  | pipeline (ReadAsync -> kernel -> WriteAsync on 2 streams vs the\n"
    "                  same work synchronously, with one output file <file>.out and with\n"
    "                  a file per stream <file>.out0/.out1; -i default 16M)\n"
    "                  | mmap (reads: mmap + cuMemHostRegister(READ_ONLY) + one copy)\n"
    "                  | device (kernels read/write through ufile queues, no-CPU and proxy\n"
    "                  paths; --compare adds the host baselines) | device-chase (dependent\n"
    "                  offsets: device-driven vs host-driven walk)\n"
    "  -I OP           read | write | randread | randwrite (default read)\n"
    "  -T SECONDS      duration of each run (default 5)\n"
    "  -n PASSES       instead of -T: passes over the file (random: as many I/Os)\n"
    "  -V              verify: every byte read is checked; writes are read back\n"
    "  -b              skip cuFileBufRegister\n"
    "  -j              JSON: one object per row and line\n"
    "  -r REPEAT       runs per row; median and spread reported (default 3 with --compare)\n"
    "  -B N            batch: I/Os per batch; async: I/Os in flight (default 128)\n"
    "  -q              quiet: no progress line, no note when the file is filled\n"
    "  --cold          drop the file from the page cache before each run\n"
    "  --odirect       open the file with O_DIRECT (ufile, nvidia, cpu, naive)\n"
    "  --compare       pinned-copy, raw, cpu, naive (best of a sweep), nvidia, ufile\n"
    "  --lib PATH      a libcufile.so to dlopen for the cuFile rows instead of the linked-in\n"
    "                  ufile (-x nvidia: default /usr/local/cuda/lib64/libcufile.so.0)\n"
    "  --verify-bytes SIZE  with -V: bytes checked in a pass after each row's timed runs\n"
    "                  (--compare: default 1G; single rows: instead of inside the timed runs)\n"
    "  --json-file PATH     also append each row as JSON to PATH\n"
    "  --thread-cpu    after each run, its CPU seconds by thread name on stderr\n"
    "  --devio K=V,...      device/device-chase knobs (docs/DEVICE_IO.md)\n";

enum LongOnly { kCold = 1000, kODirect, kCompare, kLib, kVerifyBytes, kJsonFile, kDevio, kThreadCpu };

const option kLong[] = {
    {"cold", no_argument, nullptr, kCold},
    {"odirect", no_argument, nullptr, kODirect},
    {"compare", no_argument, nullptr, kCompare},
    {"lib", required_argument, nullptr, kLib},
    {"verify-bytes", required_argument, nullptr, kVerifyBytes},
    {"json-file", required_argument, nullptr, kJsonFile},
    {"devio", required_argument, nullptr, kDevio},
    {"thread-cpu", no_argument, nullptr, kThreadCpu},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

bool ParseLong(const char *text, long lo, long hi, long *out) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// MIN:MAX:STEP, STEP either a size (added) or xN (multiplied).
bool ParseSizeRange(const std::string &text, std::vector<uint64_t> *sizes) {
  size_t c1 = text.find(':');
  if (c1 == std::string::npos) {
    uint64_t one = 0;
    if (!ParseSize(text, &one) || one == 0) return false;
    *sizes = {one};
    return true;
  }
  size_t c2 = text.find(':', c1 + 1);
  if (c2 == std::string::npos) return false;
  uint64_t lo = 0, hi = 0, step = 0;
  std::string step_text = text.substr(c2 + 1);
  bool multiply = !step_text.empty() && step_text[0] == 'x';
  if (!ParseSize(text.substr(0, c1), &lo) || !ParseSize(text.substr(c1 + 1, c2 - c1 - 1), &hi) ||
      !ParseSize(multiply ? step_text.substr(1) : step_text, &step) || lo == 0 || hi < lo ||
      step == 0 || (multiply && step < 2))
    return false;
  sizes->clear();
  for (uint64_t s = lo; s <= hi && sizes->size() < 64; s = multiply ? s * step : s + step)
    sizes->push_back(s);
  return true;
}

int Fail(const char *what, const char *arg) {
  std::fprintf(stderr, "ufile-bench: %s: '%s' (see --help)\n", what, arg ? arg : "");
  return -1;
}

// An option without an argument; false when c is none.
bool ApplyFlag(int c, Options *o) {
  switch (c) {
    case 'V':
      o->verify = true;
      break;
    case 'b':
      o->register_buffers = false;
      break;
    case 'j':
      o->json = true;
      break;
    case 'q':
      o->quiet = true;
      break;
    case kCold:
      o->cold = true;
      break;
    case kODirect:
      o->odirect = true;
      break;
    case kCompare:
      o->compare = true;
      break;
    case kThreadCpu:
      o->thread_cpu = true;
      break;
    default:
      return false;
  }
  return true;
}

// One option; returns 0, or what ParseOptions returns.
int ApplyOption(int c, const char *arg, Options *o) {
  if (ApplyFlag(c, o)) return 0;
  long v = 0;
  switch (c) {
    case 'f':
      o->file = arg;
      return 0;
    case 'D':
      o->file = std::string(arg) + "/ufile-bench.dat";
      return 0;
    case kLib:
      o->lib = arg;
      return 0;
    case kJsonFile:
      o->json_file = arg;
      return 0;
    case kDevio:
      o->devio = arg;
      return 0;
    case 'd':
      if (!ParseLong(arg, -1, 1023, &v)) return Fail("bad GPU index", arg);
      o->gpu = static_cast<int>(v);
      return 0;
    case 'w':
      if (!ParseLong(arg, 1, 1024, &v)) return Fail("bad thread count", arg);
      o->threads = static_cast<int>(v);
      return 0;
    case 'r':
      if (!ParseLong(arg, 1, 1000, &v)) return Fail("bad repeat count", arg);
      o->repeats = static_cast<int>(v);
      return 0;
    case 'B':
      if (!ParseLong(arg, 1, 65536, &v)) return Fail("bad batch size", arg);
      o->batch = static_cast<unsigned>(v);
      return 0;
    case 'n':
      if (!ParseLong(arg, 1, 1L << 40, &v)) return Fail("bad pass count", arg);
      o->passes = static_cast<uint64_t>(v);
      return 0;
    case 'T': {
      char *end = nullptr;
      o->seconds = std::strtod(arg, &end);
      return (*end || !(o->seconds > 0)) ? Fail("bad duration", arg) : 0;
    }
    case 's':
      return ParseSize(arg, &o->file_size) && o->file_size ? 0 : Fail("bad size", arg);
    case 'i':
      return ParseSizeRange(arg, &o->io_sizes) ? 0 : Fail("bad I/O size", arg);
    case 'x':
      return ParseXfer(arg, &o->xfer) ? 0 : Fail("unknown transfer type", arg);
    case 'I':
      return ParseOp(arg, &o->op) ? 0 : Fail("unknown operation", arg);
    case kVerifyBytes:
      o->verify_pass = true;
      return ParseSize(arg, &o->verify_bytes) ? 0 : Fail("bad size", arg);
    case 'h':
      std::fputs(kUsage, stdout);
      return 1;
    default:
      return Fail("unknown option", arg);
  }
}

}  // namespace

int ParseOptions(int argc, char **argv, Options *opt) {
  optind = 1;
  int c = 0;
  bool io_given = false;
  while ((c = getopt_long(argc, argv, "f:D:d:w:s:i:x:I:T:n:Vbjqr:B:h", kLong, nullptr)) != -1) {
    if (c == '?') return -1;  // getopt printed why
    io_given |= c == 'i';
    int r = ApplyOption(c, optarg, opt);
    if (r) return r;
  }
  if (optind < argc) return Fail("unexpected argument", argv[optind]);
  if (opt->file.empty()) return Fail("no file: give -f FILE or -D DIR", nullptr);
  if (opt->xfer == Xfer::kNvidia && opt->lib.empty()) opt->lib = kNvidiaLib;
  // The stream target (async <= 0.6x sync) is stated for 16 MiB chunks.
  if (opt->xfer == Xfer::kPipeline && !io_given) opt->io_sizes = {16ull << 20};
  return 0;
}

bool ParseSize(const std::string &text, uint64_t *bytes) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno || end == text.c_str() || text[0] == '-') return false;
  uint64_t mult = 1;
  std::string suffix(end);
  if (suffix == "k" || suffix == "K" || suffix == "KiB")
    mult = 1ull << 10;
  else if (suffix == "m" || suffix == "M" || suffix == "MiB")
    mult = 1ull << 20;
  else if (suffix == "g" || suffix == "G" || suffix == "GiB")
    mult = 1ull << 30;
  else if (suffix == "t" || suffix == "T" || suffix == "TiB")
    mult = 1ull << 40;
  else if (!suffix.empty())
    return false;
  if (v > UINT64_MAX / mult) return false;
  *bytes = v * mult;
  return true;
}

std::string SizeText(uint64_t b) {
  static const char *const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + " " + kUnits[u];
}

namespace {
const char *const kXferNames[] = {"ufile",  "cpu",   "naive", "pinned-copy", "raw",
                                  "nvidia", "batch", "async", "pipeline", "mmap",
                                  "device", "device-chase"};
const char *const kOpNames[] = {"read", "write", "randread", "randwrite"};
}  // namespace

const char *XferName(Xfer x) {
  return kXferNames[static_cast<int>(x)];
}
const char *OpName(Op op) {
  return kOpNames[static_cast<int>(op)];
}

bool ParseXfer(const std::string &text, Xfer *x) {
  for (int i = 0; i < static_cast<int>(std::size(kXferNames)); ++i)
    if (text == kXferNames[i]) {
      *x = static_cast<Xfer>(i);
      return true;
    }
  return false;
}

bool ParseOp(const std::string &text, Op *op) {
  for (int i = 0; i < 4; ++i)
    if (text == kOpNames[i]) {
      *op = static_cast<Op>(i);
      return true;
    }
  return false;
}

}  // namespace bench
