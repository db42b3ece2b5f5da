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
