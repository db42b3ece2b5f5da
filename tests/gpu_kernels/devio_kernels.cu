// SPDX-License-Identifier: Apache-2.0
#include "gpu_kernels/devio_kernels.h"

#include <cuda_runtime.h>

#include "ufile/device.cuh"

namespace ufile::test::devio_kernels {
namespace {

namespace dev = ufile::dev;

template <class G>
__device__ void RunOp(const G &g, const ufile_devio_view_t &v, const Op &op, int64_t *result,
                      bool leader) {
  void *p = reinterpret_cast<void *>(op.dev_ptr);
  const int64_t r = op.write ? dev::write(g, v, op.queue, op.file, p, op.size, op.off, op.timeout_ns)
                             : dev::read(g, v, op.queue, op.file, p, op.size, op.off, op.timeout_ns);
  if (leader) *result = r;
}

__global__ void SyncThread(ufile_devio_view_t v, const Op *ops, int n, int64_t *res) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) RunOp(dev::this_thread(), v, ops[i], &res[i], true);
}

__global__ void SyncWarp(ufile_devio_view_t v, const Op *ops, int n, int64_t *res) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (i < n) RunOp(dev::this_warp(), v, ops[i], &res[i], threadIdx.x % 32 == 0);
}

__global__ void SyncBlock(ufile_devio_view_t v, const Op *ops, int n, int64_t *res) {
  const int i = blockIdx.x;
  if (i < n) RunOp(dev::this_block(), v, ops[i], &res[i], threadIdx.x == 0);
}

template <class G>
__device__ int64_t AsyncOp(const G &g, const ufile_devio_view_t &v, const Op &op) {
  void *p = reinterpret_cast<void *>(op.dev_ptr);
  dev::Ticket t = op.write ? dev::submit_write(g, v, op.queue, op.file, p, op.size, op.off, true,
                                               op.timeout_ns)
                           : dev::submit_read(g, v, op.queue, op.file, p, op.size, op.off, true,
                                              op.timeout_ns);
  return dev::wait(g, v, t, op.timeout_ns);
}

__global__ void AsyncThread(ufile_devio_view_t v, const Op *ops, int n, int64_t *res) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) res[i] = AsyncOp(dev::this_thread(), v, ops[i]);
}

__global__ void AsyncBlock(ufile_devio_view_t v, const Op *ops, int n, int64_t *res) {
  const int i = blockIdx.x;
  if (i >= n) return;
  const int64_t r = AsyncOp(dev::this_block(), v, ops[i]);
  if (threadIdx.x == 0) res[i] = r;
}

// Lane l of warp w: op 32w + l (lanes past n submit nothing). A lane whose
// queue was full (-EAGAIN) submits again in the next round.
__global__ void AsyncWarpBatch(ufile_devio_view_t v, const Op *ops, int n, int64_t *res) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int warp_first = i - static_cast<int>(threadIdx.x % 32);
  if (warp_first >= n) return;
  Op op = i < n ? ops[i] : Op{};
  if (i >= n) op.queue = ops[warp_first].queue;
  bool done = i >= n;
  int64_t result = 0;
  while (__ballot_sync(0xffffffffu, !done)) {
    void *p = reinterpret_cast<void *>(op.dev_ptr);
    const uint64_t size = done ? 0 : op.size;
    dev::Ticket t = op.write ? dev::warp_submit_writes(v, op.queue, op.file, p, size, op.off)
                             : dev::warp_submit_reads(v, op.queue, op.file, p, size, op.off);
    const int64_t r = dev::warp_wait_each(v, t, op.timeout_ns);
    if (!done && r != -UFILE_DEVIO_EAGAIN) {
      result = r;
      done = true;
    }
  }
  if (i < n) res[i] = result;
}

__device__ uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// ReadLoad's kernel: see devio_kernels.h.
__global__ void ReadLoadKernel(ufile_devio_view_t v, bool warp_batch, uint64_t size,
                               const uint8_t *file, uint64_t file_size, uint64_t ns, char *bufs,
                               LoadCounts *c) {
  const uint64_t id = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned queue = static_cast<unsigned>((id / 32) % v.num_queues);
  char *buf = bufs + id * size;
  uint64_t deadline = 0;
  if (threadIdx.x % 32 == 0) deadline = ufile::devio::NowNs() + ns;
  deadline = __shfl_sync(0xffffffffu, deadline, 0);
  bool stop = false;
  for (uint64_t i = 0; !stop; ++i) {
    const int64_t off = static_cast<int64_t>(Mix(id * 1000003 + i) % (file_size - size) & ~7ull);
    int64_t r = 0;
    if (warp_batch) {  // a lane whose queue was full (-EAGAIN) submits again
      bool done = false;
      while (__ballot_sync(0xffffffffu, !done)) {
        dev::Ticket t = dev::warp_submit_reads(v, queue, 0, buf, done ? 0 : size, off);
        const int64_t x = dev::warp_wait_each(v, t);
        if (!done && x == -UFILE_DEVIO_EAGAIN) atomicAdd(&c->eagain, 1ull);
        if (!done && x != -UFILE_DEVIO_EAGAIN) r = x, done = true;
      }
    } else {
      r = dev::read(dev::this_thread(), v, queue, 0, buf, size, off);
    }
    bool good = r == static_cast<int64_t>(size);
    const auto *got = reinterpret_cast<const uint64_t *>(buf);
    const auto *want = reinterpret_cast<const uint64_t *>(file + off);
    for (uint64_t k = 0; good && k < size / 8; ++k) good = got[k] == want[k];
    if (good) {
      atomicAdd(&c->ok, 1ull);
    } else if (atomicAdd(&c->failed, 1ull) == 0) {
      c->first_failure = r == static_cast<int64_t>(size) ? -1000 : r;  // -1000: wrong bytes
    }
    stop = ufile::devio::NowNs() >= deadline;
    if (warp_batch) stop = __any_sync(0xffffffffu, stop);
  }
}

__global__ void Held(ufile_devio_view_t v, Op op, volatile uint32_t *flag, int64_t *res) {
  void *p = reinterpret_cast<void *>(op.dev_ptr);
  dev::Ticket t = dev::submit_read(dev::this_thread(), v, op.queue, op.file, p, op.size, op.off);
  if (t.status < 0) {
    *res = t.status;
    return;
  }
  while (*flag == 0) __nanosleep(1000);
  *res = dev::wait(dev::this_thread(), v, t);
}

bool Check(cudaError_t e, const char *what, std::string *err) {
  if (e == cudaSuccess) return true;
  *err = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

int Run(bool async, const ufile_devio_view_t &v, Group g, const std::vector<Op> &ops,
        std::vector<int64_t> *results, std::string *err) {
  const int n = static_cast<int>(ops.size());
  Op *d_ops = nullptr;
  int64_t *d_res = nullptr;
  if (!Check(cudaMalloc(&d_ops, n * sizeof(Op)), "cudaMalloc", err)) return -1;
  if (!Check(cudaMalloc(&d_res, n * sizeof(int64_t)), "cudaMalloc", err)) return -1;
  bool ok = Check(cudaMemcpy(d_ops, ops.data(), n * sizeof(Op), cudaMemcpyHostToDevice),
                  "cudaMemcpy", err) &&
            Check(cudaMemset(d_res, 0x7f, n * sizeof(int64_t)), "cudaMemset", err);
  if (ok) {
    switch (g) {
      case Group::kThread:
        (async ? AsyncThread : SyncThread)<<<(n + 127) / 128, 128>>>(v, d_ops, n, d_res);
        break;
      case Group::kWarp:
        SyncWarp<<<(n * 32 + 127) / 128, 128>>>(v, d_ops, n, d_res);  // async: RunAsync
        break;
      case Group::kBlock:
        (async ? AsyncBlock : SyncBlock)<<<n, 256>>>(v, d_ops, n, d_res);
        break;
    }
    ok = Check(cudaGetLastError(), "launch", err) &&
         Check(cudaDeviceSynchronize(), "kernel", err);
  }
  results->assign(n, 0);
  ok = ok && Check(cudaMemcpy(results->data(), d_res, n * sizeof(int64_t), cudaMemcpyDeviceToHost),
                   "cudaMemcpy", err);
  cudaFree(d_ops);
  cudaFree(d_res);
  return ok ? 0 : -1;
}

}  // namespace

int RunSync(const ufile_devio_view_t &v, Group g, const std::vector<Op> &ops,
            std::vector<int64_t> *results, std::string *err) {
  return Run(false, v, g, ops, results, err);
}

int RunAsync(const ufile_devio_view_t &v, Group g, const std::vector<Op> &ops,
             std::vector<int64_t> *results, std::string *err) {
  if (g == Group::kWarp) {
    // The batch kernel gives lane i op i: launch it with one thread per op.
    const int n = static_cast<int>(ops.size());
    Op *d_ops = nullptr;
    int64_t *d_res = nullptr;
    if (!Check(cudaMalloc(&d_ops, n * sizeof(Op)), "cudaMalloc", err)) return -1;
    if (!Check(cudaMalloc(&d_res, n * sizeof(int64_t)), "cudaMalloc", err)) return -1;
    bool ok = Check(cudaMemcpy(d_ops, ops.data(), n * sizeof(Op), cudaMemcpyHostToDevice),
                    "cudaMemcpy", err);
    if (ok) {
      AsyncWarpBatch<<<(n + 127) / 128, 128>>>(v, d_ops, n, d_res);
      ok = Check(cudaGetLastError(), "launch", err) &&
           Check(cudaDeviceSynchronize(), "kernel", err);
    }
    results->assign(n, 0);
    ok = ok && Check(cudaMemcpy(results->data(), d_res, n * sizeof(int64_t),
                                cudaMemcpyDeviceToHost),
                     "cudaMemcpy", err);
    cudaFree(d_ops);
    cudaFree(d_res);
    return ok ? 0 : -1;
  }
  return Run(true, v, g, ops, results, err);
}

int ReadLoad(const ufile_devio_view_t &v, Group g, unsigned blocks, unsigned threads,
             uint64_t size, const void *file_dev, uint64_t file_size, uint64_t ns,
             LoadCounts *counts, std::string *err) {
  char *bufs = nullptr;
  LoadCounts *d_counts = nullptr;
  bool ok = Check(cudaMalloc(&bufs, uint64_t{blocks} * threads * size), "cudaMalloc", err) &&
            Check(cudaMalloc(&d_counts, sizeof(LoadCounts)), "cudaMalloc", err) &&
            Check(cudaMemset(d_counts, 0, sizeof(LoadCounts)), "cudaMemset", err);
  if (ok) {
    ReadLoadKernel<<<blocks, threads>>>(v, g == Group::kWarp, size,
                                        static_cast<const uint8_t *>(file_dev), file_size, ns,
                                        bufs, d_counts);
    ok = Check(cudaGetLastError(), "launch", err) &&
         Check(cudaDeviceSynchronize(), "kernel", err) &&
         Check(cudaMemcpy(counts, d_counts, sizeof(LoadCounts), cudaMemcpyDeviceToHost),
               "cudaMemcpy", err);
  }
  cudaFree(bufs);
  cudaFree(d_counts);
  return ok ? 0 : -1;
}

HeldRequest::~HeldRequest() {
  if (running_) {
    std::string err;
    int64_t r = 0;
    Finish(&r, &err);
  }
  if (flag_) cudaFreeHost(const_cast<uint32_t *>(flag_));
  if (result_) cudaFree(result_);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

int HeldRequest::Start(const ufile_devio_view_t &v, const Op &op, std::string *err) {
  void *flag = nullptr;
  if (!Check(cudaHostAlloc(&flag, 4, cudaHostAllocMapped), "cudaHostAlloc", err)) return -1;
  flag_ = static_cast<volatile uint32_t *>(flag);
  *flag_ = 0;
  uint32_t *d_flag = nullptr;
  if (!Check(cudaHostGetDevicePointer(reinterpret_cast<void **>(&d_flag), flag, 0),
             "cudaHostGetDevicePointer", err))
    return -1;
  if (!Check(cudaMalloc(&result_, sizeof(int64_t)), "cudaMalloc", err)) return -1;
  cudaStream_t s = nullptr;
  if (!Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", err))
    return -1;
  stream_ = s;
  Held<<<1, 1, 0, s>>>(v, op, d_flag, result_);
  if (!Check(cudaGetLastError(), "launch", err)) return -1;
  running_ = true;
  return 0;
}

int HeldRequest::Finish(int64_t *result, std::string *err) {
  *flag_ = 1;
  __sync_synchronize();
  running_ = false;
  if (!Check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "kernel", err)) return -1;
  return Check(cudaMemcpy(result, result_, sizeof(int64_t), cudaMemcpyDeviceToHost), "cudaMemcpy",
               err)
             ? 0
             : -1;
}

void *DeviceAlloc(size_t n) {
  void *p = nullptr;
  return cudaMalloc(&p, n) == cudaSuccess ? p : nullptr;
}
void DeviceFree(void *p) { cudaFree(p); }
bool CopyToDevice(void *dst, const void *src, size_t n) {
  return cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess;
}
bool CopyFromDevice(void *dst, const void *src, size_t n) {
  return cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess;
}
bool DeviceFill(void *dst, int byte, size_t n) {
  return cudaMemset(dst, byte, n) == cudaSuccess;
}

}  // namespace ufile::test::devio_kernels
