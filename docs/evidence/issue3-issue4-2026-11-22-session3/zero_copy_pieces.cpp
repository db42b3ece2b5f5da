// SPDX-License-Identifier: Apache-2.0
// Experiment (issue 3): can pinning page-cache pages per request reach the
// pinned-copy ceiling if the pinning is split over threads? For each request
// of R bytes of a hot file, P threads each take R/P: register their slice of
// a file mapping with cuMemHostRegister, copy it to the GPU, unregister.
//   zero_copy_pieces FILE REQ_MIB ITERS
// Rows: pinned ceiling; per-request mmap (fresh mapping per slice) and
// persistent mapping (one mmap of the file), for P in 1,2,4,8,16. Every
// request's bytes are checked against pread in a separate pass.
#include <cuda.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#define CK(x)                                                              \
  do {                                                                     \
    CUresult r_ = (x);                                                     \
    if (r_ != CUDA_SUCCESS) {                                              \
      const char *s_ = nullptr;                                            \
      cuGetErrorString(r_, &s_);                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

static double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Ctx {
  int fd = -1;
  size_t file_size = 0, req = 0;
  char *whole = nullptr;  // persistent mapping
  CUcontext cu = nullptr;
  CUdeviceptr dev = 0;
};

// Copies [off, off+len) of the file to dev+doff through a registered mapping.
static void Slice(const Ctx &c, CUstream s, bool persistent, size_t off, size_t len,
                  size_t doff) {
  char *base;
  if (persistent) {
    base = c.whole + off;
  } else {
    void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, c.fd, static_cast<off_t>(off));
    if (m == MAP_FAILED) { std::perror("mmap"); std::exit(1); }
    base = static_cast<char *>(m);
  }
  CK(cuMemHostRegister(base, len, CU_MEMHOSTREGISTER_READ_ONLY));
  CK(cuMemcpyHtoDAsync(c.dev + doff, base, len, s));
  CK(cuStreamSynchronize(s));
  CK(cuMemHostUnregister(base));
  if (!persistent) munmap(base, len);
}

// Runs `iters` requests over the file with P participants; GB/s.
static double Run(const Ctx &c, int P, bool persistent, int iters, bool verify) {
  std::vector<CUstream> streams(P);
  for (auto &s : streams) CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::barrier start(P + 1), done(P + 1);
  std::atomic<size_t> req_off{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  const size_t piece = c.req / P;
  for (int p = 0; p < P; ++p)
    th.emplace_back([&, p] {
      CK(cuCtxSetCurrent(c.cu));
      for (;;) {
        start.arrive_and_wait();
        if (stop) return;
        Slice(c, streams[p], persistent, req_off + p * piece, piece, p * piece);
        done.arrive_and_wait();
      }
    });
  std::vector<char> host(verify ? c.req : 0), file(verify ? c.req : 0);
  size_t nreq = c.file_size / c.req;
  size_t bad = 0;
  const double t0 = Now();
  for (int i = 0; i < iters; ++i) {
    req_off = (i % nreq) * c.req;
    start.arrive_and_wait();
    done.arrive_and_wait();
    if (verify) {
      CK(cuMemcpyDtoH(host.data(), c.dev, c.req));
      if (pread(c.fd, file.data(), c.req, static_cast<off_t>(req_off.load())) !=
          static_cast<ssize_t>(c.req)) { std::perror("pread"); std::exit(1); }
      if (std::memcmp(host.data(), file.data(), c.req) != 0) ++bad;
      CK(cuMemsetD8(c.dev, 0xee, c.req));
    }
  }
  const double t = Now() - t0;
  stop = true;
  start.arrive_and_wait();
  for (auto &t1 : th) t1.join();
  for (auto &s : streams) cuStreamDestroy(s);
  if (verify) {
    std::printf("  verify %s P=%d: %zu of %d requests wrong\n",
                persistent ? "persistent" : "per-request", P, bad, iters);
    if (bad) std::exit(2);
  }
  return static_cast<double>(c.req) * iters / t / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: FILE REQ_MIB ITERS\n"); return 1; }
  Ctx c;
  c.fd = open(argv[1], O_RDONLY);
  if (c.fd < 0) { std::perror(argv[1]); return 1; }
  struct stat st;
  fstat(c.fd, &st);
  c.file_size = static_cast<size_t>(st.st_size);
  c.req = std::strtoull(argv[2], nullptr, 0) << 20;
  const int iters = std::atoi(argv[3]);
  CK(cuInit(0));
  CUdevice d;
  CK(cuDeviceGet(&d, 0));
  CK(cuDevicePrimaryCtxRetain(&c.cu, d));
  CK(cuCtxSetCurrent(c.cu));
  CK(cuMemAlloc(&c.dev, c.req));
  void *whole = mmap(nullptr, c.file_size, PROT_READ, MAP_SHARED, c.fd, 0);
  if (whole == MAP_FAILED) { std::perror("mmap whole"); return 1; }
  c.whole = static_cast<char *>(whole);

  // Pinned ceiling: one pinned buffer of the request size, copied iters times.
  void *pinned;
  CK(cuMemHostAlloc(&pinned, c.req, 0));
  std::memset(pinned, 1, c.req);
  CK(cuMemcpyHtoD(c.dev, pinned, c.req));
  double t0 = Now();
  for (int i = 0; i < iters; ++i) CK(cuMemcpyHtoD(c.dev, pinned, c.req));
  const double ceil = static_cast<double>(c.req) * iters / (Now() - t0) / 1e9;
  std::printf("request %zu MiB, %d requests; pinned ceiling %.2f GB/s\n", c.req >> 20, iters,
              ceil);
  // mincore cost of a request-sized range of the mapping (the hot check).
  std::vector<unsigned char> vec(c.req / 4096);
  t0 = Now();
  for (int i = 0; i < iters; ++i)
    mincore(c.whole + (i % (c.file_size / c.req)) * c.req, c.req, vec.data());
  std::printf("mincore of a request: %.1f us\n", (Now() - t0) / iters * 1e6);

  for (bool persistent : {false, true}) {
    Run(c, 4, persistent, 8, true);  // correctness pass, untimed
    for (int P : {1, 2, 4, 8, 16}) {
      const double g = Run(c, P, persistent, iters, false);
      std::printf("%-11s P=%-2d %6.2f GB/s  %.3f x ceiling  %.0f us/request\n",
                  persistent ? "persistent" : "per-request", P, g, g / ceil,
                  static_cast<double>(c.req) / g / 1e3);
    }
  }
  return 0;
}
