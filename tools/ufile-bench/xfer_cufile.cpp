// SPDX-License-Identifier: Apache-2.0
// ufile and nvidia: cuFileRead/cuFileWrite into a registered buffer (GPU
// memory, or host memory without a GPU), one request a call. ufile's
// functions are linked in; --lib (and every nvidia row) loads a libcufile.so
// with dlopen and calls only what dlsym found on that handle. Also sets up
// the batch and async rows, whose workers live in xfer_batch.cpp.
#include "xfer_cufile.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace bench {
namespace {

class SyncWorker : public CuFileWorker {
 public:
  using CuFileWorker::CuFileWorker;
  Status Run(const Req *reqs, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      const auto buf_off = static_cast<off_t>(reqs[i].slot * io_);
      const auto off = static_cast<off_t>(reqs[i].off);
      errno = 0;
      ssize_t r = write_ ? fns_.cuFileWrite(fh_, data_.data(), reqs[i].len, off, buf_off)
                         : fns_.cuFileRead(fh_, data_.data(), reqs[i].len, off, buf_off);
      if (r != static_cast<ssize_t>(reqs[i].len))
        return Fail("%s at %lld: %s", write_ ? "cuFileWrite" : "cuFileRead",
                    static_cast<long long>(off),
                    r < 0 ? CuFileIoError(r, errno).c_str() : "short transfer");
    }
    return {};
  }
};

class CuFileTransfer : public Transfer {
 public:
  explicit CuFileTransfer(Xfer x) : x_(x) {}
  // The workers (and their registered buffers) are gone by now.
  ~CuFileTransfer() override {
    if (fh_) fns_->cuFileHandleDeregister(fh_);
    if (opened_) fns_->driver_close();
  }

  Status Setup(const RowSpec &spec, const Gpu &gpu) override;
  Status NewWorker(int thread, std::unique_ptr<Worker> *out) override;
  size_t group() const override { return slots_; }
  std::string setting() const override;

 private:
  Status OpenDriver();

  Xfer x_;
  RowSpec spec_;
  Gpu gpu_;
  const CuFileFns *fns_ = nullptr;
  Fd fd_;
  CUfileHandle_t fh_ = nullptr;
  bool opened_ = false;  // each row opens and closes the driver: nothing carries over
  size_t slots_ = 1;
};

Status CuFileTransfer::OpenDriver() {
  fns_ = &LinkedCuFile();
  if (x_ == Xfer::kNvidia || !spec_.lib.empty()) {
    Status st = LoadCuFile(spec_.lib.empty() ? kNvidiaLib : spec_.lib, &fns_);
    if (!st.ok()) return st;
  }
  if ((x_ == Xfer::kBatch && !fns_->cuFileBatchIOSetUp) ||
      (x_ == Xfer::kAsync && !fns_->cuFileReadAsync))
    return Fail("not available yet (%s has no %s)", fns_->origin.c_str(),
                x_ == Xfer::kBatch ? "cuFileBatchIOSetUp" : "cuFileReadAsync");
  CUfileError_t err = fns_->cuFileDriverOpen();
  if (err.err != CU_FILE_SUCCESS) return Fail("cuFileDriverOpen: %s", CuFileError(err).c_str());
  opened_ = true;
  return {};
}

Status CuFileTransfer::Setup(const RowSpec &spec, const Gpu &gpu) {
  spec_ = spec;
  gpu_ = gpu;
  if (x_ == Xfer::kBatch || x_ == Xfer::kAsync) {
    // Distinct memory per I/O in flight, at most 1 GiB a thread.
    const size_t cap = std::max<size_t>(1, (size_t{1} << 30) / spec.io_size);
    slots_ = std::min<size_t>(spec.batch, cap);
  }
  if (x_ == Xfer::kAsync && !gpu.present)
    return Fail("async needs a GPU (it is ordered on CUDA streams)");
  Status st = OpenDriver();
  if (st.ok()) st = OpenFile(spec, spec.odirect, fd_.out());
  if (!st.ok()) return st;
  CUfileDescr_t descr{};
  descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  descr.handle.fd = fd_.get();
  CUfileError_t err = fns_->cuFileHandleRegister(&fh_, &descr);
  if (err.err != CU_FILE_SUCCESS) {
    fh_ = nullptr;
    return Fail("cuFileHandleRegister: %s", CuFileError(err).c_str());
  }
  return {};
}

Status CuFileTransfer::NewWorker(int, std::unique_ptr<Worker> *out) {
  CuFileWorkerArgs a;
  a.fns = fns_;
  a.fh = fh_;
  a.io = spec_.io_size;
  a.slots = slots_;
  a.spec = &spec_;
  a.gpu = &gpu_;
  Status st = Buffer::Alloc(TargetMem(gpu_), a.io * a.slots, &a.data);
  if (!st.ok()) return st;
  if (spec_.register_buffers) {
    CUfileError_t err = fns_->cuFileBufRegister(a.data.data(), a.io * a.slots, 0);
    if (err.err != CU_FILE_SUCCESS) return Fail("cuFileBufRegister: %s", CuFileError(err).c_str());
    a.registered = true;
  }
  if (x_ == Xfer::kBatch) return NewBatchWorker(std::move(a), out);
  if (x_ == Xfer::kAsync) return NewAsyncWorker(std::move(a), out);
  *out = std::make_unique<SyncWorker>(*fns_, fh_, std::move(a.data), a.io, a.registered,
                                      spec_.write());
  return {};
}

std::string CuFileTransfer::setting() const {
  std::string s = fns_ ? fns_->origin : "";
  if (spec_.odirect) s += ", O_DIRECT";
  if (!spec_.register_buffers) s += ", unregistered buffers";
  if (x_ == Xfer::kBatch) s += ", batches of " + std::to_string(slots_) + ", latency a batch";
  if (x_ == Xfer::kAsync)
    s += ", " + std::to_string(slots_) + " in flight a stream, latency per sync";
  if (!gpu_.present) s += ", host memory";
  return s;
}

}  // namespace

std::unique_ptr<Transfer> MakeCuFileTransfer(Xfer x) {
  return std::make_unique<CuFileTransfer>(x);
}

std::unique_ptr<Transfer> MakeTransfer(Xfer x) {
  switch (x) {
    case Xfer::kCpu:
      return MakeHostTransfer(false);
    case Xfer::kRaw:
      return MakeHostTransfer(true);
    case Xfer::kNaive:
      return MakeNaiveTransfer();
    case Xfer::kMmap:
      return MakeMmapTransfer();
    case Xfer::kPinnedCopy:
      return MakeCopyTransfer();
    default:
      return MakeCuFileTransfer(x);
  }
}

}  // namespace bench
