// Session 8 probe (not part of the build): do registered files help io_uring here? T threads,
// each with its own ring and a registered 4 MiB buffer (READ_FIXED), read a file with the plain
// descriptor or with it registered in the ring (IOSQE_FIXED_FILE), for S seconds:
//   rand: 4 KiB reads at random 4 KiB offsets of a page-cache-hot file (buffered), one at a time;
//   seq:  4 MiB chunks in 1 MiB pieces through O_DIRECT, the file dropped from the cache first.
// pread is the baseline. Prints ops/s, GB/s and CPU s/GB (getrusage, whole process).
//   g++ -O2 -std=c++20 uring_files_probe.cpp -o probe /usr/lib/x86_64-linux-gnu/liburing.a -lpthread
//   probe FILE rand|seq pread|uring|files THREADS SECONDS
#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

static double Cpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv) {
  if (argc != 6) return 2;
  const std::string file = argv[1], pattern = argv[2], mode = argv[3];
  const int threads = atoi(argv[4]);
  const double seconds = atof(argv[5]);
  const bool seq = pattern == "seq";
  int fd = open(file.c_str(), O_RDONLY | (seq ? O_DIRECT : 0));
  if (fd < 0) return 3;
  const off_t size = lseek(fd, 0, SEEK_END);
  if (seq) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const size_t chunk = seq ? 4u << 20 : 4096, piece = seq ? 1u << 20 : 4096;
  std::atomic<off_t> next{0};
  std::atomic<uint64_t> bytes{0}, ops{0};
  std::atomic<bool> stop{false};
  const double cpu0 = Cpu();
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      void *mem = nullptr;
      if (posix_memalign(&mem, 4096, 4u << 20) != 0) abort();
      memset(mem, 0, 4u << 20);
      char *buf = static_cast<char *>(mem);
      std::mt19937_64 rng(t + 1);
      io_uring ring;
      if (mode != "pread") {
        if (io_uring_queue_init(64, &ring, 0) != 0) abort();
        iovec iov{buf, 4u << 20};
        if (io_uring_register_buffers(&ring, &iov, 1) != 0) abort();
        if (mode == "files" && io_uring_register_files(&ring, &fd, 1) != 0) abort();
      }
      uint64_t my_ops = 0, my_bytes = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        off_t off;
        if (seq) {
          off = next.fetch_add(chunk);
          if (off + off_t(chunk) > size) { stop = true; break; }
        } else {
          off = off_t(rng() % (size / 4096)) * 4096;
        }
        if (mode == "pread") {
          if (pread(fd, buf, chunk, off) != ssize_t(chunk)) abort();
        } else {
          const size_t n = chunk / piece;
          for (size_t i = 0; i < n; ++i) {
            io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            if (mode == "files") {
              io_uring_prep_read_fixed(sqe, 0, buf + i * piece, piece, off + i * piece, 0);
              sqe->flags |= IOSQE_FIXED_FILE;
            } else {
              io_uring_prep_read_fixed(sqe, fd, buf + i * piece, piece, off + i * piece, 0);
            }
          }
          io_uring_submit_and_wait(&ring, n);
          for (size_t i = 0; i < n; ++i) {
            io_uring_cqe *cqe;
            io_uring_wait_cqe(&ring, &cqe);
            if (cqe->res != int(piece)) abort();
            io_uring_cqe_seen(&ring, cqe);
          }
        }
        ++my_ops;
        my_bytes += chunk;
        if ((my_ops & 255) == 0 &&
            std::chrono::duration<double>(Clock::now() - t0).count() > seconds)
          stop = true;
      }
      ops += my_ops;
      bytes += my_bytes;
      if (mode != "pread") io_uring_queue_exit(&ring);
      free(mem);
    });
  for (auto &th : ts) th.join();
  const double el = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = Cpu() - cpu0;
  printf("%-4s %-6s t%-2d: %10.0f ops/s, %6.2f GB/s, %.4f CPU s/GB\n", pattern.c_str(),
         mode.c_str(), threads, ops / el, bytes / el * 1e-9, cpu / (bytes * 1e-9));
  return 0;
}
