// SPDX-License-Identifier: Apache-2.0
// The example of docs/DEVICE_IO.md "Using it", whole: a kernel reads a file
// through ufile's device queues into device memory; the host checks every
// byte. Exit 0 and "ok" on success, 77 without a usable GPU, 1 on failure.
#include <cufile.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <ufile/device.cuh>  // device: the calls kernels make (header-only)
#include <ufile/device.h>    // host: create and destroy the queues (libufile)

namespace {

constexpr int kBlocks = 8;
constexpr int64_t kPerBlock = 1 << 20;

__global__ void my_kernel(ufile_devio_view_t v, char *dst, int64_t *results) {
  auto block = ufile::dev::this_block();
  const int64_t off = int64_t{blockIdx.x} * kPerBlock;
  const int64_t n = ufile::dev::read(block, v, blockIdx.x % v.num_queues, /*file*/ 0,
                                     dst + off, kPerBlock, off);  // bytes, or -errno
  if (threadIdx.x == 0) results[blockIdx.x] = n;
}

int Fail(const char *what) {
  std::fprintf(stderr, "devio_example: FAIL: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("devio_example: skipped, no usable GPU\n");
    return 77;
  }
  const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/devio_example.bin";
  const size_t total = size_t{kBlocks} * kPerBlock;
  std::vector<char> data(total);
  for (size_t i = 0; i < total; ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || write(fd, data.data(), total) != static_cast<ssize_t>(total))
    return Fail("writing the file");

  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  CUfileHandle_t fh;  // cuFileHandleRegister'd, as for cuFileRead
  if (cuFileHandleRegister(&fh, &d).err != CU_FILE_SUCCESS) return Fail("cuFileHandleRegister");
  ufile_devio_params_t p;
  ufile_devio_params_init(&p);
  p.num_queues = 4;
  char *dst = nullptr;
  int64_t *results = nullptr;
  if (cudaMalloc(&dst, total) != cudaSuccess ||
      cudaMallocManaged(&results, kBlocks * sizeof(int64_t)) != cudaSuccess)
    return Fail("cudaMalloc");
  int ok = 1;
  {
    ufile::DeviceQueues q;  // or ufile_devio_create / ufile_devio_destroy (C)
    int rc = q.Create(&fh, 1, &p);
    if (rc != 0) return Fail("ufile_devio_create");
    std::printf("devio_example: path %s\n", ufile_devio_path_name(q.path()));
    my_kernel<<<kBlocks, 256>>>(q.view(), dst, results);
    if (cudaDeviceSynchronize() != cudaSuccess) return Fail("kernel");
    if (q.Destroy() != 0) return Fail("ufile_devio_destroy");
  }
  for (int b = 0; b < kBlocks; ++b)
    if (results[b] != kPerBlock) {
      std::fprintf(stderr, "devio_example: block %d read %lld\n", b, (long long)results[b]);
      ok = 0;
    }
  std::vector<char> back(total);
  cudaMemcpy(back.data(), dst, total, cudaMemcpyDeviceToHost);
  if (back != data) ok = 0;
  cuFileHandleDeregister(fh);
  close(fd);
  unlink(path.c_str());
  if (!ok) return Fail("bytes read differ from the file");
  std::printf("devio_example: ok, %zu bytes read by %d blocks, every byte checked\n", total,
              kBlocks);
  return 0;
}
