// SPDX-License-Identifier: Apache-2.0
#include <cuda_runtime.h>

#include "gpu_kernels/stream_kernels.h"

namespace ufile::test {
namespace {

__device__ uint64_t GlobalTimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void Spin(uint64_t ns) {
  const uint64_t start = GlobalTimer();
  while (GlobalTimer() - start < ns) {
  }
}

__global__ void Fill(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = static_cast<uint8_t>((i * 2654435761u + seed) >> 7);
}

__global__ void Invert(uint8_t *dst, const uint8_t *src, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = src[i] ^ 0xA5;
}

__global__ void SetParams(size_t *size_p, off_t *file_off_p, off_t *buf_off_p, size_t size,
                          off_t file_off, off_t buf_off) {
  *size_p = size;
  *file_off_p = file_off;
  *buf_off_p = buf_off;
  __threadfence_system();
}

__global__ void CopyResult(const volatile ssize_t *in, ssize_t *out) {
  *out = *in;
  __threadfence_system();
}

}  // namespace

int LaunchSpin(CUstream s, uint64_t ns) {
  Spin<<<1, 1, 0, s>>>(ns);
  return cudaGetLastError();
}

int LaunchFill(CUstream s, CUdeviceptr p, size_t n, uint32_t seed) {
  Fill<<<256, 256, 0, s>>>(reinterpret_cast<uint8_t *>(p), n, seed);
  return cudaGetLastError();
}

int LaunchInvert(CUstream s, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  Invert<<<256, 256, 0, s>>>(reinterpret_cast<uint8_t *>(dst),
                             reinterpret_cast<const uint8_t *>(src), n);
  return cudaGetLastError();
}

int LaunchSetParams(CUstream s, size_t *size_p, off_t *file_off_p, off_t *buf_off_p, size_t size,
                    off_t file_off, off_t buf_off) {
  SetParams<<<1, 1, 0, s>>>(size_p, file_off_p, buf_off_p, size, file_off, buf_off);
  return cudaGetLastError();
}

int LaunchCopyResult(CUstream s, const ssize_t *in, ssize_t *out) {
  CopyResult<<<1, 1, 0, s>>>(in, out);
  return cudaGetLastError();
}

int WarmUpKernels(CUstream s, size_t *size_p, off_t *off_p, ssize_t *result_p) {
  Spin<<<1, 1, 0, s>>>(0);
  Fill<<<1, 1, 0, s>>>(nullptr, 0, 0);
  Invert<<<1, 1, 0, s>>>(nullptr, nullptr, 0);
  SetParams<<<1, 1, 0, s>>>(size_p, off_p, off_p, *size_p, *off_p, *off_p);
  CopyResult<<<1, 1, 0, s>>>(result_p, result_p);
  if (cudaGetLastError() != cudaSuccess) return cudaGetLastError();
  return cudaStreamSynchronize(s);
}

}  // namespace ufile::test
