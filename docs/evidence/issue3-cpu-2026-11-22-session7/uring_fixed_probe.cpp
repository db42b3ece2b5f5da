// Session 7 probe (not part of the build): CPU per GB of cold O_DIRECT reads of a file into
// host buffers, by pread, io_uring READ, or io_uring READ_FIXED (buffer registered with the
// thread's ring), into malloc'd or cuMemHostAlloc'd memory. T threads, each reading chunks of C
// bytes in P-byte pieces (all pieces of a chunk in flight at once), for S seconds.
//   g++ -O2 -std=c++20 uring_fixed_probe.cpp -o probe /usr/lib/x86_64-linux-gnu/liburing.a -ldl -lpthread
//   probe FILE pread|uring|fixed malloc|cuda THREADS CHUNK_MB PIECE_MB SECONDS
#include <dlfcn.h>
#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

static double Cpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void *CudaHostAlloc(size_t n) {
  static void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  using InitFn = int (*)(unsigned);
  using RetainFn = int (*)(void **, int);
  using SetFn = int (*)(void *);
  using AllocFn = int (*)(void **, size_t, unsigned);
  static void *ctx = nullptr;
  if (!ctx) {
    reinterpret_cast<InitFn>(dlsym(lib, "cuInit"))(0);
    reinterpret_cast<RetainFn>(dlsym(lib, "cuDevicePrimaryCtxRetain"))(&ctx, 0);
  }
  reinterpret_cast<SetFn>(dlsym(lib, "cuCtxSetCurrent"))(ctx);
  void *p = nullptr;
  if (reinterpret_cast<AllocFn>(dlsym(lib, "cuMemHostAlloc_v2") ? dlsym(lib, "cuMemHostAlloc_v2")
                                                                 : dlsym(lib, "cuMemHostAlloc"))(&p, n, 1) != 0)
    return nullptr;
  return p;
}

int main(int argc, char **argv) {
  if (argc != 8) return 2;
  const std::string file = argv[1], mode = argv[2], mem = argv[3];
  const int threads = atoi(argv[4]);
  const size_t chunk = size_t(atoi(argv[5])) << 20, piece = size_t(atoi(argv[6])) << 20;
  const double seconds = atof(argv[7]);
  int fd = open(file.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) return 3;
  const off_t size = lseek(fd, 0, SEEK_END);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::vector<void *> bufs(threads);
  for (int t = 0; t < threads; ++t) {
    if (mem == "cuda") bufs[t] = CudaHostAlloc(chunk);
    else if (posix_memalign(&bufs[t], 4096, chunk) != 0) bufs[t] = nullptr;
    if (!bufs[t]) return 4;
    memset(bufs[t], 0, chunk);
  }
  std::atomic<off_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> stop{false};
  const double cpu0 = Cpu();
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      char *buf = static_cast<char *>(bufs[t]);
      io_uring ring;
      if (mode != "pread") {
        if (io_uring_queue_init(64, &ring, 0) != 0) abort();
        if (mode == "fixed") {
          iovec iov{buf, chunk};
          if (io_uring_register_buffers(&ring, &iov, 1) != 0) { fprintf(stderr, "register failed\n"); abort(); }
        }
      }
      while (!stop.load()) {
        off_t off = next.fetch_add(chunk);
        if (off + off_t(chunk) > size) { stop = true; break; }
        if (mode == "pread") {
          if (pread(fd, buf, chunk, off) != ssize_t(chunk)) abort();
        } else {
          size_t n = chunk / piece;
          for (size_t i = 0; i < n; ++i) {
            io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            if (mode == "fixed") io_uring_prep_read_fixed(sqe, fd, buf + i * piece, piece, off + i * piece, 0);
            else io_uring_prep_read(sqe, fd, buf + i * piece, piece, off + i * piece);
          }
          io_uring_submit_and_wait(&ring, n);
          for (size_t i = 0; i < n; ++i) {
            io_uring_cqe *cqe;
            io_uring_wait_cqe(&ring, &cqe);
            if (cqe->res != int(piece)) abort();
            io_uring_cqe_seen(&ring, cqe);
          }
        }
        bytes += chunk;
        if (std::chrono::duration<double>(Clock::now() - t0).count() > seconds) stop = true;
      }
      if (mode != "pread") io_uring_queue_exit(&ring);
    });
  for (auto &th : ts) th.join();
  const double el = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = Cpu() - cpu0;
  printf("%-6s %-6s t%-2d chunk %zuM piece %zuM: %.2f GB/s, %.4f CPU s/GB\n", mode.c_str(), mem.c_str(),
         threads, chunk >> 20, piece >> 20, bytes / el * 1e-9, cpu / (bytes * 1e-9));
  return 0;
}
