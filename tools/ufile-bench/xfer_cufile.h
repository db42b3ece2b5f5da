// SPDX-License-Identifier: Apache-2.0
// The cuFile rows (ufile, nvidia, batch, async): what their workers share.
#pragma once

#include <cufile.h>

#include "cufile_fns.h"
#include "xfer_util.h"

namespace bench {

// A worker that moves data through cuFile into (out of) a registered buffer
// of slots * io bytes; deregisters it before the buffer is freed.
class CuFileWorker : public BufferWorker {
 public:
  CuFileWorker(const CuFileFns &fns, CUfileHandle_t fh, Buffer data, size_t io, bool registered,
               bool write)
      : BufferWorker(std::move(data), io),
        fns_(fns),
        fh_(fh),
        registered_(registered),
        write_(write) {}
  ~CuFileWorker() override {
    if (registered_) fns_.cuFileBufDeregister(data_.data());
  }

 protected:
  const CuFileFns &fns_;
  CUfileHandle_t fh_;
  bool registered_;
  bool write_;
};

// What a batch or async worker needs to be made.
struct CuFileWorkerArgs {
  const CuFileFns *fns = nullptr;
  CUfileHandle_t fh = nullptr;
  Buffer data;
  size_t io = 0;
  size_t slots = 1;
  bool registered = false;
  const RowSpec *spec = nullptr;
  const Gpu *gpu = nullptr;
};

// Batch: one cuFileBatchIOSetUp per worker, batches of `slots` I/Os.
Status NewBatchWorker(CuFileWorkerArgs args, std::unique_ptr<Worker> *out);
// Async: a stream per worker, `slots` cuFileReadAsync/WriteAsync then a sync.
Status NewAsyncWorker(CuFileWorkerArgs args, std::unique_ptr<Worker> *out);

}  // namespace bench
