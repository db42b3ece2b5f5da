// SPDX-License-Identifier: Apache-2.0
// naive: what a user writes by hand. Per thread, two pinned buffers of one
// chunk and a stream: pread a chunk into one buffer while the other's
// cuMemcpyHtoDAsync runs; the request is done when the stream is. Writes are
// the mirror (DtoH of the next chunk while the previous one is pwritten).
// Without a GPU the copies are memcpy.
#include <algorithm>
#include <cstring>

#include "gpu/cuda_api.h"
#include "xfer_util.h"

namespace bench {
namespace {

class NaiveWorker : public BufferWorker {
 public:
  NaiveWorker(Buffer target, Buffer pin0, Buffer pin1, size_t io, size_t chunk, int fd, bool write)
      : BufferWorker(std::move(target), io), chunk_(chunk), fd_(fd), write_(write) {
    pin_[0] = std::move(pin0);
    pin_[1] = std::move(pin1);
  }
  ~NaiveWorker() override;
  Status Init();

  Status Run(const Req *reqs, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      Status st = write_ ? Write(reqs[i]) : Read(reqs[i]);
      if (!st.ok()) return st;
    }
    return {};
  }

 private:
  Status Read(const Req &r);
  Status Write(const Req &r);
  Status Copy(size_t k, const Req &r, int slot);  // chunk k between slot and the target
  Status Wait(int slot);

  size_t chunk_;
  int fd_;
  bool write_;
  Buffer pin_[2];
  CUstream stream_ = nullptr;
  CUevent ev_[2] = {nullptr, nullptr};
};

NaiveWorker::~NaiveWorker() {
  ufile::CudaApi &cu = ufile::Cuda();
  for (CUevent e : ev_)
    if (e) cu.cuEventDestroy(e);
  if (stream_) cu.cuStreamDestroy(stream_);
}

Status NaiveWorker::Init() {
  if (!data_.on_device()) return {};
  ufile::CudaApi &cu = ufile::Cuda();
  CUresult res = cu.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
  for (CUevent &e : ev_)
    if (res == CUDA_SUCCESS) res = cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
  if (res != CUDA_SUCCESS) return Fail("naive setup: %s", CudaError(res).c_str());
  return {};
}

Status NaiveWorker::Copy(size_t k, const Req &r, int slot) {
  char *target = SlotData(r.slot) + k * chunk_;
  const size_t n = std::min(chunk_, r.len - k * chunk_);
  if (!data_.on_device()) {
    if (write_)
      std::memcpy(pin_[slot].data(), target, n);
    else
      std::memcpy(target, pin_[slot].data(), n);
    return {};
  }
  ufile::CudaApi &cu = ufile::Cuda();
  auto dev = reinterpret_cast<CUdeviceptr>(target);
  CUresult res = write_ ? cu.cuMemcpyDtoHAsync(pin_[slot].data(), dev, n, stream_)
                        : cu.cuMemcpyHtoDAsync(dev, pin_[slot].data(), n, stream_);
  if (res == CUDA_SUCCESS) res = cu.cuEventRecord(ev_[slot], stream_);
  if (res != CUDA_SUCCESS) return Fail("naive copy: %s", CudaError(res).c_str());
  return {};
}

Status NaiveWorker::Wait(int slot) {
  if (!data_.on_device()) return {};
  CUresult res = ufile::Cuda().cuEventSynchronize(ev_[slot]);
  if (res != CUDA_SUCCESS) return Fail("naive wait: %s", CudaError(res).c_str());
  return {};
}

Status NaiveWorker::Read(const Req &r) {
  const size_t chunks = (r.len + chunk_ - 1) / chunk_;
  for (size_t k = 0; k < chunks; ++k) {
    const int slot = static_cast<int>(k % 2);
    Status st = k >= 2 ? Wait(slot) : Status{};  // its previous copy must be done
    const size_t n = std::min(chunk_, r.len - k * chunk_);
    if (st.ok()) st = FullIo(fd_, pin_[slot].data(), n, r.off + k * chunk_, false);
    if (st.ok()) st = Copy(k, r, slot);
    if (!st.ok()) return st;
  }
  Status st = Wait(0);
  return st.ok() && chunks > 1 ? Wait(1) : st;
}

Status NaiveWorker::Write(const Req &r) {
  const size_t chunks = (r.len + chunk_ - 1) / chunk_;
  Status st = Copy(0, r, 0);
  for (size_t k = 0; st.ok() && k < chunks; ++k) {
    const int slot = static_cast<int>(k % 2);
    if (k + 1 < chunks) st = Copy(k + 1, r, 1 - slot);  // the other buffer's pwrite is done
    if (st.ok()) st = Wait(slot);
    const size_t n = std::min(chunk_, r.len - k * chunk_);
    if (st.ok()) st = FullIo(fd_, pin_[slot].data(), n, r.off + k * chunk_, true);
  }
  return st;
}

class NaiveTransfer : public Transfer {
 public:
  Status Setup(const RowSpec &spec, const Gpu &gpu) override {
    spec_ = spec;
    gpu_ = gpu;
    chunk_ = spec.chunk ? std::min<size_t>(spec.chunk, spec.io_size) : spec.io_size;
    return OpenFile(spec, spec.odirect, fd_.out());
  }

  Status NewWorker(int, std::unique_ptr<Worker> *out) override {
    Buffer target, pin0, pin1;
    Status st = Buffer::Alloc(TargetMem(gpu_), spec_.io_size, &target);
    if (st.ok()) st = Buffer::Alloc(StagingMem(gpu_), chunk_, &pin0);
    if (st.ok()) st = Buffer::Alloc(StagingMem(gpu_), chunk_, &pin1);
    if (!st.ok()) return st;
    auto w = std::make_unique<NaiveWorker>(std::move(target), std::move(pin0), std::move(pin1),
                                           spec_.io_size, chunk_, fd_.get(), spec_.write());
    st = w->Init();
    if (st.ok()) *out = std::move(w);
    return st;
  }

  std::string setting() const override {
    return std::to_string(spec_.threads) + (spec_.threads == 1 ? " thread x " : " threads x ") +
           SizeText(chunk_) + " chunks" + (spec_.odirect ? ", O_DIRECT" : "") +
           (gpu_.present ? "" : ", memcpy (no GPU)");
  }

 private:
  RowSpec spec_;
  Gpu gpu_;
  size_t chunk_ = 0;
  Fd fd_;
};

}  // namespace

std::unique_ptr<Transfer> MakeNaiveTransfer() {
  return std::make_unique<NaiveTransfer>();
}

}  // namespace bench
