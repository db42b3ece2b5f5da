// SPDX-License-Identifier: Apache-2.0
// Kernels for the stream-ordered I/O tests, launched on a given stream.
// Each returns the launch's cudaError_t as an int (0: launched).
#pragma once

#include <cuda.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ufile::test {

// Busy-waits about `ns` nanoseconds on the GPU: work that delays the stream.
int LaunchSpin(CUstream s, uint64_t ns);
// p[i] = Pattern(seed, i) for i < n.
int LaunchFill(CUstream s, CUdeviceptr p, size_t n, uint32_t seed);
// dst[i] = src[i] ^ 0xA5 for i < n.
int LaunchInvert(CUstream s, CUdeviceptr dst, CUdeviceptr src, size_t n);
// *size_p, *file_off_p, *buf_off_p = the given values (host-mapped memory).
int LaunchSetParams(CUstream s, size_t *size_p, off_t *file_off_p, off_t *buf_off_p, size_t size,
                    off_t file_off, off_t buf_off);
// *out = *in (host-mapped memory): what a kernel sees of a result.
int LaunchCopyResult(CUstream s, const ssize_t *in, ssize_t *out);

// Launches each kernel once on s (no work) and waits: with lazy module
// loading (CUDA's default) a kernel's first launch may synchronize the
// context, so the tests load them before any stream waits on ufile.
int WarmUpKernels(CUstream s, size_t *size_p, off_t *off_p, ssize_t *result_p);

// The byte LaunchFill writes at index i.
inline uint8_t Pattern(uint32_t seed, size_t i) {
  return static_cast<uint8_t>((i * 2654435761u + seed) >> 7);
}

}  // namespace ufile::test
