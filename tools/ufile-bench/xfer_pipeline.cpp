// SPDX-License-Identifier: Apache-2.0
// -x pipeline (see xfer_pipeline.h). The kernel is PTX text JIT-compiled by
// the driver (cuModuleLoadData), so the tool needs no nvcc to build.
#include "xfer_pipeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cufile_fns.h"
#include "gpu/cuda_api.h"
#include "testfile.h"
#include "xfer_util.h"

namespace bench {
namespace {

constexpr uint32_t kXor = 0x5a5a5a5a;
constexpr unsigned kBlockThreads = 256;
constexpr unsigned kMaxBlocks = 1024;
constexpr int kStreams = 2;
constexpr double kTarget = 0.6;
// Fixed size and offsets (read at submission), 4 KiB aligned.
constexpr unsigned kStreamFlags =
    CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET |
    CU_FILE_STREAM_FIXED_FILE_SIZE | CU_FILE_STREAM_PAGE_ALIGNED_INPUTS;

// xor_words(buf, n): buf[i] ^= 0x5a5a5a5a for i < n, grid-stride loop.
// PTX 7.0 / sm_52: the oldest target CUDA 13's JIT still takes; it compiles
// for any newer GPU (checked with CUDA 13.0 ptxas -arch=sm_90).
const char kXorPtx[] = R"(
.version 7.0
.target sm_52
.address_size 64
.visible .entry xor_words(.param .u64 p_buf, .param .u64 p_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<9>;
  ld.param.u64 %rd1, [p_buf];
  ld.param.u64 %rd2, [p_n];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd3, %r1, %r2;
  cvt.u64.u32 %rd4, %r3;
  add.u64 %rd5, %rd3, %rd4;
  mul.wide.u32 %rd6, %r4, %r2;
LOOP:
  setp.ge.u64 %p1, %rd5, %rd2;
  @%p1 bra DONE;
  shl.b64 %rd7, %rd5, 2;
  add.u64 %rd8, %rd1, %rd7;
  ld.global.u32 %r5, [%rd8];
  xor.b32 %r5, %r5, 0x5a5a5a5a;
  st.global.u32 [%rd8], %r5;
  add.u64 %rd5, %rd5, %rd6;
  bra LOOP;
DONE:
  ret;
}
)";

// Where the chunks' results go. kShared: one file, chunk i at i * chunk, so
// the two streams' writes meet on one inode (Linux serialises buffered
// writers of a file). kPerStream: a file per stream, chunk i in file i % 2 at
// (i / 2) * chunk; the synchronous loop writes the same chunks to the same
// places.
enum Layout { kShared = 0, kPerStream = 1, kLayouts = 2 };
const char *const kLayoutName[kLayouts] = {"one output file", "an output file per stream"};

struct Output {
  std::string path;
  Fd fd;
  CUfileHandle_t fh = nullptr;
};

// What both variants share, set up once outside the timed runs.
struct Pipe {
  Pipe() = default;
  Pipe(const Pipe &) = delete;
  Pipe &operator=(const Pipe &) = delete;
  ~Pipe();

  const CuFileFns *fns = nullptr;
  bool driver_open = false;
  std::string in_path;
  Fd in_fd;
  CUfileHandle_t in_fh = nullptr;
  Output shared;                // kShared
  Output per_stream[kStreams];  // kPerStream
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  CUstream streams[kStreams] = {};
  bool stream_registered[kStreams] = {};
  Buffer bufs[kStreams];  // one per stream: in-stream order serialises its chunks
  bool buf_registered[kStreams] = {};
  size_t chunk = 0;
  size_t count = 0;
};

// Deregisters everything before the buffers, files and driver go away.
Pipe::~Pipe() {
  for (int s = 0; s < kStreams; ++s) {
    if (buf_registered[s]) fns->cuFileBufDeregister(bufs[s].data());
    if (stream_registered[s]) fns->cuFileStreamDeregister(streams[s]);
    if (streams[s]) ufile::Cuda().cuStreamDestroy(streams[s]);
  }
  if (in_fh) fns->cuFileHandleDeregister(in_fh);
  if (shared.fh) fns->cuFileHandleDeregister(shared.fh);
  for (Output &o : per_stream)
    if (o.fh) fns->cuFileHandleDeregister(o.fh);
  if (mod) ufile::Cuda().cuModuleUnload(mod);
  if (driver_open) fns->driver_close();
}

Status RegisterFile(const Pipe &p, int fd, CUfileHandle_t *fh) {
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileError_t err = p.fns->cuFileHandleRegister(fh, &descr);
  if (err.err == CU_FILE_SUCCESS) return {};
  *fh = nullptr;
  return Fail("cuFileHandleRegister: %s", CuFileError(err).c_str());
}

Status OpenFiles(const Options &opt, Pipe *p) {
  p->fns = &LinkedCuFile();
  if (!opt.lib.empty()) {
    Status st = LoadCuFile(opt.lib, &p->fns);
    if (!st.ok()) return st;
  }
  if (!p->fns->cuFileReadAsync || !p->fns->cuFileStreamRegister)
    return Fail("%s has no cuFileReadAsync", p->fns->origin.c_str());
  CUfileError_t err = p->fns->cuFileDriverOpen();
  if (err.err != CU_FILE_SUCCESS) return Fail("cuFileDriverOpen: %s", CuFileError(err).c_str());
  p->driver_open = true;
  const int direct = opt.odirect ? O_DIRECT : 0;
  p->in_path = opt.file;
  *p->in_fd.out() = open(p->in_path.c_str(), O_RDONLY | O_CLOEXEC | direct);
  if (p->in_fd.get() < 0) return ErrnoFail(p->in_path.c_str(), errno);
  Status st = RegisterFile(*p, p->in_fd.get(), &p->in_fh);
  auto open_out = [&](Output *o, const std::string &path) {
    o->path = path;
    *o->fd.out() = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | direct, 0644);
    if (o->fd.get() < 0) return ErrnoFail(path.c_str(), errno);
    return RegisterFile(*p, o->fd.get(), &o->fh);
  };
  if (st.ok()) st = open_out(&p->shared, opt.file + ".out");
  for (int s = 0; s < kStreams && st.ok(); ++s)
    st = open_out(&p->per_stream[s], opt.file + ".out" + std::to_string(s));
  return st;
}

// Where chunk i is written in a layout.
const Output &OutputOf(const Pipe &p, Layout l, size_t i, off_t *off) {
  if (l == kShared) {
    *off = static_cast<off_t>(i * p.chunk);
    return p.shared;
  }
  *off = static_cast<off_t>(i / kStreams * p.chunk);
  return p.per_stream[i % kStreams];
}

Status SetupGpu(const Options &opt, Pipe *p) {
  auto &cu = ufile::Cuda();
  CUresult r = cu.cuModuleLoadData(&p->mod, kXorPtx);
  if (r != CUDA_SUCCESS) return Fail("cuModuleLoadData (PTX JIT): %s", CudaError(r).c_str());
  r = cu.cuModuleGetFunction(&p->fn, p->mod, "xor_words");
  if (r != CUDA_SUCCESS) return Fail("cuModuleGetFunction: %s", CudaError(r).c_str());
  for (int s = 0; s < kStreams; ++s) {
    r = cu.cuStreamCreate(&p->streams[s], CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) return Fail("cuStreamCreate: %s", CudaError(r).c_str());
    CUfileError_t err = p->fns->cuFileStreamRegister(p->streams[s], kStreamFlags);
    if (err.err != CU_FILE_SUCCESS)
      return Fail("cuFileStreamRegister: %s", CuFileError(err).c_str());
    p->stream_registered[s] = true;
    Status st = Buffer::Alloc(MemKind::kDevice, p->chunk, &p->bufs[s]);
    if (!st.ok()) return st;
    if (!opt.register_buffers) continue;
    err = p->fns->cuFileBufRegister(p->bufs[s].data(), p->chunk, 0);
    if (err.err != CU_FILE_SUCCESS) return Fail("cuFileBufRegister: %s", CuFileError(err).c_str());
    p->buf_registered[s] = true;
  }
  return {};
}

Status LaunchXor(const Pipe &p, int s) {
  auto ptr = reinterpret_cast<CUdeviceptr>(p.bufs[s].data());
  uint64_t words = p.chunk / 4;
  void *args[] = {&ptr, &words};  // copied by the launch
  const auto blocks = static_cast<unsigned>(
      std::min<uint64_t>(kMaxBlocks, (words + kBlockThreads - 1) / kBlockThreads));
  CUresult r = ufile::Cuda().cuLaunchKernel(p.fn, blocks, 1, 1, kBlockThreads, 1, 1, 0,
                                            p.streams[s], args, nullptr);
  return r == CUDA_SUCCESS ? Status{} : Fail("cuLaunchKernel: %s", CudaError(r).c_str());
}

// One chunk's async parameters: must live until its stream is synchronized
// (the results are stored when the stream reaches the operation).
struct ChunkIo {
  size_t size = 0;
  off_t file_off = 0;
  off_t out_off = 0;
  off_t buf_off = 0;
  ssize_t read = 0;
  ssize_t written = 0;
};

Status EnqueueChunk(const Pipe &p, Layout l, size_t i, ChunkIo *io) {
  const int s = static_cast<int>(i % kStreams);
  io->size = p.chunk;
  io->file_off = static_cast<off_t>(i * p.chunk);
  const Output &out = OutputOf(p, l, i, &io->out_off);
  void *buf = p.bufs[s].data();
  CUfileError_t err = p.fns->cuFileReadAsync(p.in_fh, buf, &io->size, &io->file_off, &io->buf_off,
                                             &io->read, p.streams[s]);
  if (err.err != CU_FILE_SUCCESS) return Fail("cuFileReadAsync: %s", CuFileError(err).c_str());
  Status st = LaunchXor(p, s);
  if (!st.ok()) return st;
  err = p.fns->cuFileWriteAsync(out.fh, buf, &io->size, &io->out_off, &io->buf_off, &io->written,
                                p.streams[s]);
  if (err.err != CU_FILE_SUCCESS) return Fail("cuFileWriteAsync: %s", CuFileError(err).c_str());
  return {};
}

Status RunAsync(const Pipe &p, Layout l, double *ms) {
  std::vector<ChunkIo> io(p.count);
  const uint64_t t0 = NowNs();
  Status st;
  for (size_t i = 0; i < p.count && st.ok(); ++i) st = EnqueueChunk(p, l, i, &io[i]);
  // Synchronize even after a failed enqueue: io must outlive what was queued.
  for (CUstream s : p.streams) {
    CUresult r = ufile::Cuda().cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS && st.ok()) st = Fail("cuStreamSynchronize: %s", CudaError(r).c_str());
  }
  *ms = static_cast<double>(NowNs() - t0) / 1e6;
  if (!st.ok()) return st;
  const auto want = static_cast<ssize_t>(p.chunk);
  for (size_t i = 0; i < p.count; ++i)
    if (io[i].read != want || io[i].written != want)
      return Fail("async chunk %zu: read %zd, wrote %zd of %zu bytes", i, io[i].read, io[i].written,
                  p.chunk);
  return {};
}

// Where the synchronous loop's time goes (ms): what overlapping can save.
struct Phases {
  double read = 0, kernel = 0, write = 0;
};

Status RunSync(const Pipe &p, Layout l, double *ms, Phases *ph) {
  const uint64_t t0 = NowNs();
  uint64_t read_ns = 0, kernel_ns = 0, write_ns = 0;
  void *buf = p.bufs[0].data();
  for (size_t i = 0; i < p.count; ++i) {
    const auto off = static_cast<off_t>(i * p.chunk);
    errno = 0;
    const uint64_t a = NowNs();
    ssize_t r = p.fns->cuFileRead(p.in_fh, buf, p.chunk, off, 0);
    if (r != static_cast<ssize_t>(p.chunk))
      return Fail("cuFileRead at %lld: %s", static_cast<long long>(off),
                  r < 0 ? CuFileIoError(r, errno).c_str() : "short transfer");
    const uint64_t b = NowNs();
    Status st = LaunchXor(p, 0);
    if (!st.ok()) return st;
    CUresult cr = ufile::Cuda().cuStreamSynchronize(p.streams[0]);
    if (cr != CUDA_SUCCESS) return Fail("cuStreamSynchronize: %s", CudaError(cr).c_str());
    const uint64_t c = NowNs();
    errno = 0;
    off_t out_off;
    const Output &out = OutputOf(p, l, i, &out_off);
    r = p.fns->cuFileWrite(out.fh, buf, p.chunk, out_off, 0);
    if (r != static_cast<ssize_t>(p.chunk))
      return Fail("cuFileWrite to %s at %lld: %s", out.path.c_str(), static_cast<long long>(out_off),
                  r < 0 ? CuFileIoError(r, errno).c_str() : "short transfer");
    read_ns += b - a;
    kernel_ns += c - b;
    write_ns += NowNs() - c;
  }
  *ms = static_cast<double>(NowNs() - t0) / 1e6;
  ph->read = static_cast<double>(read_ns) / 1e6;
  ph->kernel = static_cast<double>(kernel_ns) / 1e6;
  ph->write = static_cast<double>(write_ns) / 1e6;
  return {};
}

// Output == input ^ kXor word by word, read back with plain pread (through
// fresh descriptors: what the files hold, whatever the handles did).
Status Verify(const Pipe &p, Layout l) {
  Fd in;
  *in.out() = open(p.in_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in.get() < 0) return ErrnoFail("verify: open", errno);
  std::vector<uint32_t> a(p.chunk / 4), b(p.chunk / 4);
  for (size_t i = 0; i < p.count; ++i) {
    off_t out_off;
    const Output &o = OutputOf(p, l, i, &out_off);
    Fd out;
    *out.out() = open(o.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (out.get() < 0) return ErrnoFail("verify: open", errno);
    const uint64_t off = i * p.chunk;
    Status st = FullIo(in.get(), reinterpret_cast<char *>(a.data()), p.chunk, off, false);
    if (st.ok())
      st = FullIo(out.get(), reinterpret_cast<char *>(b.data()), p.chunk,
                  static_cast<uint64_t>(out_off), false);
    if (!st.ok()) return Fail("verify: %s", st.error.c_str());
    for (size_t w = 0; w < a.size(); ++w)
      if (b[w] != (a[w] ^ kXor))
        return Fail("verify: %s: word at byte %llu is %08x, want %08x", o.path.c_str(),
                    static_cast<unsigned long long>(out_off + w * 4), b[w], a[w] ^ kXor);
  }
  return {};
}

// Empties the outputs (so a missing write shows), drops caches with --cold,
// runs one variant and checks what it wrote.
Status RunVariant(const Options &opt, const Pipe &p, Layout l, bool async, double *ms,
                  Phases *ph) {
  if (ftruncate(p.shared.fd.get(), 0) != 0) return ErrnoFail("ftruncate output", errno);
  for (const Output &o : p.per_stream)
    if (ftruncate(o.fd.get(), 0) != 0) return ErrnoFail("ftruncate output", errno);
  std::string how;
  Status st = opt.cold ? DropCache(p.in_path, &how) : Status{};
  if (st.ok()) st = async ? RunAsync(p, l, ms) : RunSync(p, l, ms, ph);
  if (st.ok()) st = Verify(p, l);
  return st;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// floor: the best ratio any overlap of the synchronous loop's phases could
// reach, max(reads + kernels, writes) / their sum (median over the runs);
// it holds for kShared only.
void Report(const ReportContext &ctx, const Pipe &p, Layout l, double async_ms, double sync_ms,
            int runs, double floor) {
  const double ratio = async_ms / sync_ms;
  const bool met = ratio <= kTarget;
  nlohmann::json j;
  j["type"] = "pipeline";
  j["setting"] = p.fns->origin + ", " + std::to_string(kStreams) + " streams, " + kLayoutName[l];
  j["layout"] = l == kShared ? "shared" : "per-stream";
  j["chunks"] = p.count;
  j["chunk_size"] = p.chunk;
  j["runs"] = runs;
  j["async_ms"] = async_ms;
  j["sync_ms"] = sync_ms;
  j["ratio"] = ratio;
  if (l == kShared) j["overlap_floor"] = floor;
  j["target"] = "ratio <= 0.6";
  j["target_met"] = met;
  j["verified"] = true;
  j["file"] = ctx.file;
  j["gpu"] = ctx.gpu;
  j["host"] = ctx.host;
  j["date"] = ctx.date;
  if (ctx.json_out) std::fprintf(ctx.json_out, "%s\n", j.dump().c_str());
  if (ctx.json) {
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("pipeline, %s: async %.1f ms, sync %.1f ms, ratio %.3f (target <= 0.6: %s",
              kLayoutName[l], async_ms, sync_ms, ratio, met ? "met" : "NOT met");
  // One file takes one buffered writer at a time, so the synchronous phases
  // bound any overlap; two files can be written at once, so they do not.
  if (l == kShared)
    std::printf("; best any overlap of the synchronous phases could give: %.3f", floor);
  std::printf(")\n");
}

Status Measure(const Options &opt, const Pipe &p, Layout l, const ReportContext &ctx) {
  std::vector<double> async_ms, sync_ms, floors;
  const int runs = opt.effective_repeats();
  for (int r = 0; r < runs; ++r) {
    double a = 0, s = 0;
    Phases ph;
    Status st = RunVariant(opt, p, l, true, &a, &ph);
    if (st.ok()) st = RunVariant(opt, p, l, false, &s, &ph);
    if (!st.ok()) return st;
    async_ms.push_back(a);
    sync_ms.push_back(s);
    const double total = ph.read + ph.kernel + ph.write;
    floors.push_back(total > 0 ? std::max(ph.read + ph.kernel, ph.write) / total : 1.0);
    if (!ctx.json)
      std::printf(
          "pipeline, %s, run %d: async %.1f ms, sync %.1f ms (reads %.1f, kernels %.1f, writes "
          "%.1f), verified\n",
          kLayoutName[l], r + 1, a, s, ph.read, ph.kernel, ph.write);
  }
  Report(ctx, p, l, Median(async_ms), Median(sync_ms), runs, Median(floors));
  return {};
}

}  // namespace

int RunPipeline(const Options &opt, const Gpu &gpu, const ReportContext &ctx) {
  if (!gpu.present) {
    std::fprintf(stderr, "ufile-bench: -x pipeline needs a GPU\n");
    return 1;
  }
  BindThread(gpu);
  Pipe p;
  p.chunk = opt.io_sizes.front();
  p.count = opt.file_size / p.chunk;
  Status st;
  if (p.chunk % 4096 != 0 || p.count < kStreams)
    st = Fail("chunk size (-i) must be a multiple of 4 KiB and the file at least 2 chunks");
  if (st.ok()) st = OpenFiles(opt, &p);
  if (st.ok()) st = SetupGpu(opt, &p);
  if (!ctx.json && st.ok())
    std::printf("pipeline: %zu chunks of %s from %s, on %s\n", p.count, SizeText(p.chunk).c_str(),
                p.in_path.c_str(), ctx.gpu.c_str());
  for (int l = 0; l < kLayouts && st.ok(); ++l) st = Measure(opt, p, static_cast<Layout>(l), ctx);
  // The outputs are scratch, as large as the input.
  if (!p.shared.path.empty()) unlink(p.shared.path.c_str());
  for (const Output &o : p.per_stream)
    if (!o.path.empty()) unlink(o.path.c_str());
  if (!st.ok()) {
    std::fprintf(stderr, "ufile-bench: pipeline: %s\n", st.error.c_str());
    return 1;
  }
  if (!ctx.json) std::printf("verified\n");
  return 0;
}

}  // namespace bench
