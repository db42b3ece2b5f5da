// SPDX-License-Identifier: Apache-2.0
// first_read: what a fresh process's first large read costs. Makes the
// primary context of GPU 0 current (as a CUDA application has it), times
// cuFileDriverOpen, registers a handle for FILE (O_DIRECT with -d) and reads
// SIZE bytes into device memory three times, each timed, then checks every
// byte of the last read against the file. One line of results. Run it in a
// fresh process per sample, with the file hot (or cold) as wanted.
//   first_read FILE SIZE_MiB [-d]
// Build (from the repository root, after building ufile_static in BUILD):
//   g++ -std=c++20 -O2 -Iinclude -Isrc bench/first_read/first_read.cpp
//     BUILD/src/libufile_static.a /usr/lib/x86_64-linux-gnu/liburing.a -ldl -lpthread
#include <cufile.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/cuda_api.h"

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE SIZE_MiB [-d]\n", argv[0]);
    return 2;
  }
  const size_t n = std::strtoull(argv[2], nullptr, 10) << 20;
  const bool direct = argc > 3 && std::strcmp(argv[3], "-d") == 0;
  ufile::CudaApi &cuda = ufile::Cuda();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUdeviceptr d = 0;
  if (!cuda.available || cuda.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuda.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
      cuda.cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuda.cuMemAlloc(&d, n) != CUDA_SUCCESS ||
      cuda.cuMemsetD8(d, 0, n) != CUDA_SUCCESS) {
    std::fprintf(stderr, "first_read: no usable GPU\n");
    return 77;
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (cuFileDriverOpen().err != CU_FILE_SUCCESS) return 1;
  const auto t1 = Clock::now();
  const int fd = open(argv[1], O_RDONLY | (direct ? O_DIRECT : 0));
  if (fd < 0) return 1;
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  if (cuFileHandleRegister(&fh, &descr).err != CU_FILE_SUCCESS) return 1;
  double ms[3];
  for (double &m : ms) {
    const auto a = Clock::now();
    const ssize_t r = cuFileRead(fh, reinterpret_cast<void *>(d), n, 0, 0);
    const auto b = Clock::now();
    if (r != static_cast<ssize_t>(n)) {
      std::fprintf(stderr, "first_read: cuFileRead returned %zd\n", r);
      return 1;
    }
    m = Ms(a, b);
  }
  std::vector<char> want(n), got(n);
  const int bfd = open(argv[1], O_RDONLY);
  const bool read_ok = bfd >= 0 && pread(bfd, want.data(), n, 0) == static_cast<ssize_t>(n);
  cuda.cuMemcpyDtoH(got.data(), d, n);
  const bool ok = read_ok && std::memcmp(want.data(), got.data(), n) == 0;
  const double gb = static_cast<double>(n) / 1e9;
  std::printf("open %.1f ms; reads %.2f %.2f %.2f GB/s; first/third %.2f; verify %s\n",
              Ms(t0, t1), gb / ms[0] * 1e3, gb / ms[1] * 1e3, gb / ms[2] * 1e3, ms[2] / ms[0],
              ok ? "OK" : "MISMATCH");
  cuFileHandleDeregister(fh);
  close(fd);
  cuFileDriverClose();
  return ok ? 0 : 1;
}
