// SPDX-License-Identifier: Apache-2.0
// Kernels for tests/gpu/devio_gpu_test.cpp, built with nvcc (static cudart)
// and called from host test code: each runs a list of device-initiated
// requests (ufile/device.cuh) and returns their per-request results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ufile/device_types.h"

namespace ufile::test::devio_kernels {

enum class Group { kThread, kWarp, kBlock };

struct Op {
  uint32_t queue = 0;
  uint32_t file = 0;
  uint32_t write = 0;
  uint32_t pad = 0;
  uint64_t dev_ptr = 0;  // device memory
  uint64_t size = 0;
  int64_t off = 0;
  uint64_t timeout_ns = 0;
};

// Op i by group i (thread, warp or block i), synchronously. 0, or -1 with *err.
int RunSync(const ufile_devio_view_t &v, Group g, const std::vector<Op> &ops,
            std::vector<int64_t> *results, std::string *err);
// Asynchronously: kThread: each thread submit (waiting for a slot) + wait;
// kWarp: lane i of warp w does op 32w + i through warp_submit_* and
// warp_wait_each (one doorbell per warp). kBlock: block submit + wait.
int RunAsync(const ufile_devio_view_t &v, Group g, const std::vector<Op> &ops,
             std::vector<int64_t> *results, std::string *err);

// What ReadLoad counted: requests that returned every byte asked, and the
// others (with the first such result).
struct LoadCounts {
  unsigned long long ok = 0;
  unsigned long long failed = 0;
  long long first_failure = 0;
  unsigned long long eagain = 0;  // kWarp: submits refused with -EAGAIN (then made again)
};

// Sustained reads for `ns` nanoseconds: every lane of blocks x threads reads
// `size` bytes (a multiple of 8) at 8-byte-aligned offsets of its own on queue
// (warp index % queues), checking every byte against file_dev (the file's
// bytes in device memory). kWarp: a lane a request, warp_submit_reads +
// warp_wait_each; kThread: each thread its own synchronous read. 0, or -1
// with *err.
int ReadLoad(const ufile_devio_view_t &v, Group g, unsigned blocks, unsigned threads, uint64_t size,
             const void *file_dev, uint64_t file_size, uint64_t ns, LoadCounts *counts,
             std::string *err);

// A kernel that submits op, then spins until the host sets the flag, then
// waits: Start() launches it and returns; Finish() sets the flag, waits for
// the kernel and gives its result.
class HeldRequest {
 public:
  HeldRequest() = default;
  ~HeldRequest();
  int Start(const ufile_devio_view_t &v, const Op &op, std::string *err);
  int Finish(int64_t *result, std::string *err);

 private:
  volatile uint32_t *flag_ = nullptr;  // host-mapped
  int64_t *result_ = nullptr;          // device
  void *stream_ = nullptr;
  bool running_ = false;
};

// Device memory helpers (cudart), so tests need no CUDA headers.
void *DeviceAlloc(size_t n);
void DeviceFree(void *p);
bool CopyToDevice(void *dst, const void *src, size_t n);
bool CopyFromDevice(void *dst, const void *src, size_t n);
bool DeviceFill(void *dst, int byte, size_t n);

}  // namespace ufile::test::devio_kernels
