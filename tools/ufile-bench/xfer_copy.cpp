// SPDX-License-Identifier: Apache-2.0
// pinned-copy: the PCIe ceiling. The same requests as the row, minus the
// file: each is one cuMemcpyHtoDAsync (reads) or DtoH (writes) between a
// pinned buffer and GPU memory on the thread's stream, waited for before the
// next. Without a GPU it is a host memcpy, reported as such.
#include <cstring>

#include "gpu/cuda_api.h"
#include "xfer_util.h"

namespace bench {
namespace {

class CopyWorker : public Worker {
 public:
  CopyWorker(Buffer host, Buffer target, CUstream stream, bool write)
      : host_(std::move(host)), target_(std::move(target)), stream_(stream), write_(write) {}
  ~CopyWorker() override {
    if (stream_) ufile::Cuda().cuStreamDestroy(stream_);
  }

  Status Run(const Req *reqs, size_t n) override {
    ufile::CudaApi &cu = ufile::Cuda();
    for (size_t i = 0; i < n; ++i) {
      const size_t len = reqs[i].len;
      if (!target_.on_device()) {
        if (write_)
          std::memcpy(host_.data(), target_.data(), len);
        else
          std::memcpy(target_.data(), host_.data(), len);
        continue;
      }
      auto dev = reinterpret_cast<CUdeviceptr>(target_.data());
      CUresult res = write_ ? cu.cuMemcpyDtoHAsync(host_.data(), dev, len, stream_)
                            : cu.cuMemcpyHtoDAsync(dev, host_.data(), len, stream_);
      if (res == CUDA_SUCCESS) res = cu.cuStreamSynchronize(stream_);
      if (res != CUDA_SUCCESS) return Fail("copy: %s", CudaError(res).c_str());
    }
    return {};
  }
  char *SlotData(size_t) override { return nullptr; }  // no file data to check
  bool SlotOnDevice() const override { return false; }

 private:
  Buffer host_, target_;
  CUstream stream_;
  bool write_;
};

class CopyTransfer : public Transfer {
 public:
  Status Setup(const RowSpec &spec, const Gpu &gpu) override {
    spec_ = spec;
    gpu_ = gpu.present;
    return {};
  }

  Status NewWorker(int, std::unique_ptr<Worker> *out) override {
    Buffer host, target;
    Status st = Buffer::Alloc(gpu_ ? MemKind::kPinned : MemKind::kHost, spec_.io_size, &host);
    if (st.ok())
      st = Buffer::Alloc(gpu_ ? MemKind::kDevice : MemKind::kHost, spec_.io_size, &target);
    if (!st.ok()) return st;
    CUstream stream = nullptr;
    if (gpu_) {
      CUresult res = ufile::Cuda().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
      if (res != CUDA_SUCCESS) return Fail("cuStreamCreate: %s", CudaError(res).c_str());
    }
    *out = std::make_unique<CopyWorker>(std::move(host), std::move(target), stream, spec_.write());
    return {};
  }

  bool moves_file_data() const override { return false; }
  std::string setting() const override {
    if (!gpu_) return "host memcpy, a reference: no GPU link to measure";
    return spec_.write() ? "GPU -> pinned, no file" : "pinned -> GPU, no file";
  }

 private:
  RowSpec spec_;
  bool gpu_ = false;
};

}  // namespace

std::unique_ptr<Transfer> MakeCopyTransfer() {
  return std::make_unique<CopyTransfer>();
}

}  // namespace bench
