// SPDX-License-Identifier: Apache-2.0
// ufile-demo: writes random data to a file through cuFileWrite, reads it back
// through cuFileRead, verifies every byte and prints the throughput. Uses GPU
// memory when a GPU is usable, host memory otherwise, and says which.
//   ufile-demo [-f FILE] [-s SIZE_MiB] [--direct]
// Exit status: 0 verified, 1 a call failed or the bytes differ, 2 usage.
// A file the demo created is removed at the end, also after a failure.
#include <cufile.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "gpu/cuda_api.h"

namespace {

using Clock = std::chrono::steady_clock;

// The largest size: the demo holds three copies in host memory.
constexpr size_t kMaxMiB = 1 << 20;

struct Options {
  std::string path = "ufile-demo.bin";
  size_t mib = 256;
  bool direct = false;
};

void PrintUsage(std::FILE *out, const char *argv0) {
  std::fprintf(out,
               "usage: %s [-f FILE] [-s SIZE_MiB (1 - %zu)] [--direct]\n"
               "  -f FILE     file to write and read back (default ufile-demo.bin; removed\n"
               "              at the end if the demo created it)\n"
               "  -s SIZE     MiB to write and read (default 256)\n"
               "  --direct    open the file with O_DIRECT\n"
               "  -h, --help  this text\n"
               "exit status: 0 verified; 1 a call failed or the bytes differ; 2 usage\n",
               argv0, kMaxMiB);
}

// A usage error: why, then the usage, on stderr; exit status 2.
[[noreturn]] void Usage(const char *argv0, const std::string &why) {
  std::fprintf(stderr, "ufile-demo: %s\n", why.c_str());
  PrintUsage(stderr, argv0);
  std::exit(2);
}

// A whole number of MiB from 1 to kMaxMiB, digits only.
bool ParseMiB(const char *text, size_t *mib) {
  if (!*text) return false;
  size_t v = 0;
  for (const char *p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + static_cast<size_t>(*p - '0');
    if (v > kMaxMiB) return false;
  }
  *mib = v;
  return v >= 1;
}

Options Parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-f" || a == "-s") && i + 1 == argc) {
      Usage(argv[0], a + " needs a value");
    } else if (a == "-f") {
      o.path = argv[++i];
    } else if (a == "-s") {
      if (!ParseMiB(argv[++i], &o.mib)) Usage(argv[0], "-s takes a size in MiB from 1 to 1048576");
    } else if (a == "--direct") {
      o.direct = true;
    } else if (a == "-h" || a == "--help") {
      PrintUsage(stdout, argv[0]);
      std::exit(0);
    } else if (a.size() > 1 && a[0] == '-') {
      Usage(argv[0], "unknown option " + a);
    } else {
      Usage(argv[0], "unexpected argument '" + a + "'");
    }
  }
  return o;
}

// A failed call: its result as a cuFile status name or an errno message.
int Fail(const char *what, long code) {
  if (code == -1)
    std::fprintf(stderr, "ufile-demo: %s failed: %s\n", what, std::strerror(errno));
  else
    std::fprintf(stderr, "ufile-demo: %s failed: %s (%ld)\n", what,
                 cufileop_status_error(static_cast<CUfileOpError>(code < 0 ? -code : code)), code);
  return 1;
}

// The demo's buffer: device memory on GPU 0 if possible, else host memory.
struct Buffer {
  char *ptr = nullptr;
  bool on_gpu = false;
  CUdeviceptr dptr = 0;
  std::vector<char> host;

  explicit Buffer(size_t n) {
    ufile::CudaApi &cuda = ufile::Cuda();
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    if (cuda.available && cuda.cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
        cuda.cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
        cuda.cuCtxSetCurrent(ctx) == CUDA_SUCCESS && cuda.cuMemAlloc(&dptr, n) == CUDA_SUCCESS) {
      ptr = reinterpret_cast<char *>(dptr);
      on_gpu = true;
      return;
    }
    host.resize(n);
    ptr = host.data();
  }
  ~Buffer() {
    if (on_gpu) ufile::Cuda().cuMemFree(dptr);
  }
  void Upload(const std::vector<char> &src) {
    if (on_gpu)
      ufile::Cuda().cuMemcpyHtoD(dptr, src.data(), src.size());
    else
      std::memcpy(ptr, src.data(), src.size());
  }
  void Download(std::vector<char> &dst) {
    if (on_gpu)
      ufile::Cuda().cuMemcpyDtoH(dst.data(), dptr, dst.size());
    else
      std::memcpy(dst.data(), ptr, dst.size());
  }
};

void Describe(const Buffer &buf) {
  ufile::CudaApi &cuda = ufile::Cuda();
  if (!buf.on_gpu) {
    std::printf("memory: host (no usable GPU: %s)\n",
                cuda.why_unavailable.empty() ? "allocation failed" : cuda.why_unavailable.c_str());
    return;
  }
  char name[128] = "?";
  CUdevice dev = 0;
  cuda.cuDeviceGet(&dev, 0);
  cuda.cuDeviceGetName(name, sizeof name, dev);
  std::printf("memory: GPU 0 (%s) device memory\n", name);
}

double GBps(size_t bytes, Clock::duration d) {
  return static_cast<double>(bytes) / std::chrono::duration<double>(d).count() / 1e9;
}

int Run(const Options &o);

}  // namespace

int main(int argc, char **argv) {
  const Options o = Parse(argc, argv);
  try {
    return Run(o);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "ufile-demo: not enough memory for %zu MiB (three copies are held)\n",
                 o.mib);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ufile-demo: %s\n", e.what());
  }
  return 1;
}

namespace {

// Registers, writes, reads back and verifies.
int RunOnFile(const Options &o, int fd, Buffer &buf, const std::vector<char> &src,
              std::vector<char> &back);

int Run(const Options &o) {
  const size_t n = o.mib << 20;
  std::vector<char> src(n), back(n);
  std::mt19937_64 rng(std::random_device{}());
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&src[i], &v, 8);
  }
  Buffer buf(n);
  Describe(buf);
  buf.Upload(src);

  // Only a file this run created is removed (never, say, a device node).
  const int flags = O_RDWR | (o.direct ? O_DIRECT : 0);
  int fd = open(o.path.c_str(), flags | O_CREAT | O_EXCL, 0644);
  const bool created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = open(o.path.c_str(), flags | O_TRUNC);
  if (fd < 0) return Fail(("open " + o.path).c_str(), -1);
  const int rc = RunOnFile(o, fd, buf, src, back);
  close(fd);
  if (created) unlink(o.path.c_str());
  cuFileDriverClose();
  return rc;
}

int RunOnFile(const Options &o, int fd, Buffer &buf, const std::vector<char> &src,
              std::vector<char> &back) {
  const size_t n = src.size();
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  CUfileError_t st = cuFileHandleRegister(&fh, &descr);
  if (st.err != CU_FILE_SUCCESS) return Fail("cuFileHandleRegister", st.err);
  st = cuFileBufRegister(buf.ptr, n, 0);
  if (st.err != CU_FILE_SUCCESS) return Fail("cuFileBufRegister", st.err);

  auto t0 = Clock::now();
  ssize_t w = cuFileWrite(fh, buf.ptr, n, 0, 0);
  auto t1 = Clock::now();
  if (w != static_cast<ssize_t>(n)) return Fail("cuFileWrite", w);
  buf.Upload(std::vector<char>(n, 0));  // the read must really refill it
  auto t2 = Clock::now();
  ssize_t r = cuFileRead(fh, buf.ptr, n, 0, 0);
  auto t3 = Clock::now();
  if (r != static_cast<ssize_t>(n)) return Fail("cuFileRead", r);
  buf.Download(back);
  const bool ok = std::memcmp(src.data(), back.data(), n) == 0;

  std::printf("file: %s (%s), %zu MiB\n", o.path.c_str(), o.direct ? "O_DIRECT" : "buffered", o.mib);
  std::printf("cuFileWrite: %.2f GB/s\ncuFileRead:  %.2f GB/s (page cache hot)\n", GBps(n, t1 - t0),
              GBps(n, t3 - t2));
  std::printf("verify: %s (%zu bytes compared)\n", ok ? "OK" : "MISMATCH", n);
  cuFileBufDeregister(buf.ptr);
  cuFileHandleDeregister(fh);
  return ok ? 0 : 1;
}

}  // namespace
