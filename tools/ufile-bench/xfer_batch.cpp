// SPDX-License-Identifier: Apache-2.0
// batch: each worker owns a batch (cuFileBatchIOSetUp), submits its requests
// together and waits for all with cuFileBatchIOGetStatus.
// async: each worker owns a stream, enqueues cuFileReadAsync/WriteAsync for
// its requests and synchronizes the stream.
// Both say "not available yet" when the library refuses the first call.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "gpu/cuda_api.h"
#include "xfer_cufile.h"

namespace bench {
namespace {

bool NotImplemented(CUfileError_t err) {
  return err.err == CU_FILE_IO_NOT_SUPPORTED || err.err == CU_FILE_ASYNC_NOT_SUPPORTED ||
         err.err == CU_FILE_PLATFORM_NOT_SUPPORTED;
}

std::string Explain(const char *fn, CUfileError_t err) {
  return std::string(NotImplemented(err) ? "not available yet (" : "") + fn + ": " +
         CuFileError(err) + (NotImplemented(err) ? ")" : "");
}

class BatchWorker : public CuFileWorker {
 public:
  BatchWorker(CuFileWorkerArgs &a, CUfileBatchHandle_t batch)
      : CuFileWorker(*a.fns, a.fh, std::move(a.data), a.io, a.registered, a.spec->write()),
        batch_(batch),
        params_(a.slots),
        events_(a.slots) {}
  ~BatchWorker() override { fns_.cuFileBatchIODestroy(batch_); }

  Status Run(const Req *reqs, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      CUfileIOParams_t &p = params_[i];
      p = CUfileIOParams_t{};
      p.mode = CUFILE_BATCH;
      p.u.batch.devPtr_base = data_.data();
      p.u.batch.file_offset = static_cast<off_t>(reqs[i].off);
      p.u.batch.devPtr_offset = static_cast<off_t>(reqs[i].slot * io_);
      p.u.batch.size = reqs[i].len;
      p.fh = fh_;
      p.opcode = write_ ? CUFILE_WRITE : CUFILE_READ;
      p.cookie = reinterpret_cast<void *>(static_cast<uintptr_t>(i));
    }
    const auto nr = static_cast<unsigned>(n);
    CUfileError_t err = fns_.cuFileBatchIOSubmit(batch_, nr, params_.data(), 0);
    if (err.err != CU_FILE_SUCCESS) return Fail("%s", Explain("cuFileBatchIOSubmit", err).c_str());
    return Reap(reqs, nr);
  }

 private:
  // Waits until all nr I/Os of the batch completed, checking each.
  Status Reap(const Req *reqs, unsigned nr) {
    for (unsigned done = 0; done < nr;) {
      unsigned got = nr - done;
      timespec timeout{30, 0};
      CUfileError_t err =
          fns_.cuFileBatchIOGetStatus(batch_, nr - done, &got, events_.data(), &timeout);
      if (err.err != CU_FILE_SUCCESS)
        return Fail("%s", Explain("cuFileBatchIOGetStatus", err).c_str());
      if (got == 0) return Fail("batch: no completion within 30 s");
      for (unsigned e = 0; e < got; ++e) {
        const auto i = reinterpret_cast<uintptr_t>(events_[e].cookie);
        if (i >= nr || events_[e].status != CUFILE_COMPLETE || events_[e].ret != reqs[i].len)
          return Fail("batch I/O %zu: status 0x%x, ret %lld", static_cast<size_t>(i),
                      static_cast<unsigned>(events_[e].status),
                      static_cast<long long>(events_[e].ret));
      }
      done += got;
    }
    return {};
  }

  CUfileBatchHandle_t batch_;
  std::vector<CUfileIOParams_t> params_;
  std::vector<CUfileIOEvents_t> events_;
};

class AsyncWorker : public CuFileWorker {
 public:
  AsyncWorker(CuFileWorkerArgs &a, CUstream stream, bool stream_registered)
      : CuFileWorker(*a.fns, a.fh, std::move(a.data), a.io, a.registered, a.spec->write()),
        stream_(stream),
        stream_registered_(stream_registered),
        size_(a.slots),
        foff_(a.slots),
        boff_(a.slots),
        done_(a.slots) {}
  ~AsyncWorker() override {
    if (stream_registered_) fns_.cuFileStreamDeregister(stream_);
    ufile::Cuda().cuStreamDestroy(stream_);
  }

  Status Run(const Req *reqs, size_t n) override { return Submit(reqs, n, write_); }

  // Enqueues n I/Os on the stream, then waits for the stream and checks them.
  Status Submit(const Req *reqs, size_t n, bool write) {
    for (size_t i = 0; i < n; ++i) {
      size_[i] = reqs[i].len;
      foff_[i] = static_cast<off_t>(reqs[i].off);
      boff_[i] = static_cast<off_t>(reqs[i].slot * io_);
      done_[i] = 0;
      auto fn = write ? fns_.cuFileWriteAsync : fns_.cuFileReadAsync;
      CUfileError_t err =
          fn(fh_, data_.data(), &size_[i], &foff_[i], &boff_[i], &done_[i], stream_);
      if (err.err != CU_FILE_SUCCESS)
        return Fail("%s", Explain(write ? "cuFileWriteAsync" : "cuFileReadAsync", err).c_str());
    }
    CUresult res = ufile::Cuda().cuStreamSynchronize(stream_);
    if (res != CUDA_SUCCESS) return Fail("cuStreamSynchronize: %s", CudaError(res).c_str());
    for (size_t i = 0; i < n; ++i)
      if (done_[i] != static_cast<ssize_t>(reqs[i].len))
        return Fail("async I/O at %lld: %lld bytes done of %zu", static_cast<long long>(foff_[i]),
                    static_cast<long long>(done_[i]), reqs[i].len);
    return {};
  }

 private:
  CUstream stream_;
  bool stream_registered_;
  // Arguments are passed by pointer and read when the stream reaches them.
  std::vector<size_t> size_;
  std::vector<off_t> foff_, boff_;
  std::vector<ssize_t> done_;
};

// A batch of a.slots I/Os refused as an invalid value: the library's limit,
// properties.io_batchsize, is the likely cause; say so, with its value when
// the library is ufile, linked in.
Status BatchTooLarge(const CuFileWorkerArgs &a, CUfileError_t err) {
  size_t limit = 0;
  const bool known = a.fns == &LinkedCuFile() &&
                     cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &limit).err ==
                         CU_FILE_SUCCESS;
  const std::string is = known ? " is " + std::to_string(limit) : "";
  return Fail("cuFileBatchIOSetUp refused a batch of %zu I/Os (%s): -B is over the library's "
              "largest batch, properties.io_batchsize%s (ufile: 1 - 4096, default 128); give -B "
              "at most that, or raise it in the file named by CUFILE_ENV_PATH_JSON",
              static_cast<size_t>(a.slots), CuFileError(err).c_str(), is.c_str());
}

}  // namespace

Status NewBatchWorker(CuFileWorkerArgs a, std::unique_ptr<Worker> *out) {
  CUfileBatchHandle_t batch = nullptr;
  CUfileError_t err = a.fns->cuFileBatchIOSetUp(&batch, static_cast<unsigned>(a.slots));
  if (err.err != CU_FILE_SUCCESS) {
    if (a.registered) a.fns->cuFileBufDeregister(a.data.data());
    if (err.err == CU_FILE_INVALID_VALUE && a.slots > 1) return BatchTooLarge(a, err);
    return Fail("not available yet (cuFileBatchIOSetUp: %s)", CuFileError(err).c_str());
  }
  *out = std::make_unique<BatchWorker>(a, batch);
  return {};
}

Status NewAsyncWorker(CuFileWorkerArgs a, std::unique_ptr<Worker> *out) {
  CUstream stream = nullptr;
  CUresult res = ufile::Cuda().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (res != CUDA_SUCCESS) {
    if (a.registered) a.fns->cuFileBufDeregister(a.data.data());
    return Fail("cuStreamCreate: %s", CudaError(res).c_str());
  }
  // Registration is an optimization: an unregistered stream still works.
  unsigned flags = CU_FILE_STREAM_FIXED_BUF_OFFSET | CU_FILE_STREAM_FIXED_FILE_OFFSET |
                   CU_FILE_STREAM_FIXED_FILE_SIZE |
                   (a.io % 4096 == 0 ? CU_FILE_STREAM_PAGE_ALIGNED_INPUTS : 0);
  bool registered = a.fns->cuFileStreamRegister &&
                    a.fns->cuFileStreamRegister(stream, flags).err == CU_FILE_SUCCESS;
  const uint64_t probe_len = std::min<uint64_t>(a.io, a.spec->file_size);
  auto w = std::make_unique<AsyncWorker>(a, stream, registered);
  // One read decides whether the stream API works here at all.
  Req probe{0, static_cast<size_t>(probe_len), 0};
  Status st = w->Submit(&probe, 1, false);
  if (!st.ok()) {
    if (st.error.rfind("not available yet", 0) != 0)
      st.error = "not available yet (" + st.error + ")";
    return st;
  }
  *out = std::move(w);
  return {};
}

}  // namespace bench
