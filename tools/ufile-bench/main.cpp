// SPDX-License-Identifier: Apache-2.0
// ufile-bench: a gdsio-style benchmark of file -> GPU (and back) paths, and
// the tool that measures ufile against its ceilings (--compare).
// See docs/BENCHMARKS.md for what each row measures and the recorded tables.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "compare.h"
#include "measure.h"
#include "options.h"
#include "testfile.h"
#include "xfer_device.h"
#include "xfer_pipeline.h"

namespace bench {
namespace {

// The transfer types that only run with a GPU.
bool NeedsGpu(Xfer x) {
  return x == Xfer::kPipeline || x == Xfer::kDevice || x == Xfer::kDeviceChase;
}

// The folder the file is (to be) in must exist: said before any work.
Status CheckFileDir(const std::string &file) {
  const size_t slash = file.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string dir = slash == 0 ? "/" : file.substr(0, slash);
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0)
    return Status{"directory " + dir + ": " + std::strerror(errno)};
  if (!S_ISDIR(st.st_mode)) return Status{dir + " is not a directory"};
  return {};
}

int RunSingle(const Options &opt, const Gpu &gpu, const ReportContext &ctx) {
  MeasurePlan mp;
  mp.repeats = opt.effective_repeats();
  mp.seconds = opt.seconds;
  mp.passes = opt.passes;
  mp.cold = opt.cold;
  // -V checks inside the timed runs; with --verify-bytes, in a pass after them
  // (the timed runs then measure the transfer alone, as --compare does).
  mp.verify = !opt.verify        ? VerifyMode::kNone
              : opt.verify_pass ? VerifyMode::kPass
                                : VerifyMode::kInline;
  mp.verify_bytes = opt.verify_bytes;
  mp.progress = !opt.quiet && isatty(STDERR_FILENO);
  mp.thread_cpu = opt.thread_cpu;
  int rc = 0;
  for (uint64_t io : opt.io_sizes) {
    RowSpec spec = BaseSpec(opt, io);
    PrintTableHeader(ctx, spec, mp.repeats, opt.cold ? "cold" : "hot", "ufile-bench");
    RowResult row = MeasureRow(spec, gpu, mp);
    if (spec.xfer == Xfer::kPinnedCopy && !gpu.present) row.type = "memcpy";
    PrintRow(ctx, row);
    PrintTableNotes(ctx, {row}, gpu.present, false);
    PrintCacheNote(ctx, row.cache);
    if (!row.error.empty() || row.verified == Verified::kFailed) rc = 1;
  }
  if (opt.verify && !opt.json && !opt.verify_pass)
    std::printf(
        "verify: every byte read was checked (writes read back); the figures include "
        "the checking\n");
  if (opt.verify && !opt.json && opt.verify_pass)
    std::printf("verify: a pass after each row's timed runs checked its first %s through the same "
                "transfer (writes read back)\n",
                SizeText(opt.verify_bytes).c_str());
  return rc;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

int Main(int argc, char **argv) {
  Options opt;
  const int parsed = ParseOptions(argc, argv, &opt);
  if (parsed != 0) return parsed > 0 ? 0 : 2;
  if (Status st = CheckFileDir(opt.file); !st.ok()) {
    std::fprintf(stderr, "ufile-bench: %s\n", st.error.c_str());
    return 1;
  }
  // The cpu rows never touch the GPU: don't make them wait for CUDA.
  const bool wants_gpu = opt.compare || opt.xfer != Xfer::kCpu;
  Gpu gpu = OpenGpu(wants_gpu ? opt.gpu : -1);
  if (!wants_gpu) gpu.name = "host memory (cpu rows)";
  // Before the test file is made.
  if (NeedsGpu(opt.xfer) && !gpu.present) {
    std::fprintf(stderr, "ufile-bench: -x %s needs a GPU (%s)\n", XferName(opt.xfer),
                 gpu.why.empty() ? "-d -1 asks for host memory" : gpu.why.c_str());
    return 1;
  }
  // The reason once; the tables name the memory in short.
  if (wants_gpu && !gpu.why.empty())
    std::fprintf(stderr, "ufile-bench: %s; measuring host-memory rows only\n", gpu.why.c_str());
  const int fill_threads =
      static_cast<int>(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
  Status st = PrepareFile(opt.file, &opt.file_size, opt.verify, fill_threads, opt.quiet);
  if (!st.ok()) {
    std::fprintf(stderr, "ufile-bench: %s\n", st.error.c_str());
    return 1;
  }
  ReportContext ctx;
  ctx.file = opt.file;
  ctx.file_size = opt.file_size;
  ctx.gpu = gpu.present ? "GPU " + std::to_string(gpu.index) + " " + gpu.name : gpu.name;
  ctx.gpu_why = gpu.why;
  ctx.date = UtcNow();
  ctx.host = HostName();
  ctx.json = opt.json;
  if (!opt.json_file.empty() && !(ctx.json_out = std::fopen(opt.json_file.c_str(), "a"))) {
    std::perror(opt.json_file.c_str());
    return 1;
  }
  const int rc = opt.xfer == Xfer::kDevice        ? RunDevice(opt, gpu, ctx)
                 : opt.xfer == Xfer::kDeviceChase ? RunDeviceChase(opt, gpu, ctx)
                 : opt.compare                    ? RunCompare(opt, gpu, ctx)
                 : opt.xfer == Xfer::kPipeline ? RunPipeline(opt, gpu, ctx)
                                               : RunSingle(opt, gpu, ctx);
  if (ctx.json_out) std::fclose(ctx.json_out);
  return rc;
}

}  // namespace
}  // namespace bench

int main(int argc, char **argv) {
  return bench::Main(argc, argv);
}
