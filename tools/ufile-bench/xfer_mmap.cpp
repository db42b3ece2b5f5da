// SPDX-License-Identifier: Apache-2.0
// mmap: the zero-copy alternative for page-cache-hot reads, measured beside
// ufile's staged reads. Per request: mmap the file range, cuMemHostRegister it
// (read-only), one cuMemcpyHtoDAsync straight from the page cache to the
// GPU, then unregister and unmap. No CPU copy, but the pages are pinned and
// unpinned for every request. Reads only; needs a GPU.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gpu/cuda_api.h"
#include "xfer_util.h"

namespace bench {
namespace {

class MmapWorker : public BufferWorker {
 public:
  MmapWorker(Buffer target, size_t io, int fd) : BufferWorker(std::move(target), io), fd_(fd) {}
  ~MmapWorker() override {
    if (stream_) ufile::Cuda().cuStreamDestroy(stream_);
  }
  Status Init() {
    CUresult res = ufile::Cuda().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
    if (res != CUDA_SUCCESS) return Fail("mmap setup: %s", CudaError(res).c_str());
    return {};
  }
  Status Run(const Req *reqs, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      Status st = Read(reqs[i]);
      if (!st.ok()) return st;
    }
    return {};
  }

 private:
  Status Read(const Req &r) {
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = r.off / page * page;
    const size_t len = (r.off + r.len - start + page - 1) / page * page;
    void *map = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(start));
    if (map == MAP_FAILED) return Fail("mmap: %s", strerror(errno));
    ufile::CudaApi &cu = ufile::Cuda();
    CUresult res = cu.cuMemHostRegister(map, len, CU_MEMHOSTREGISTER_READ_ONLY);
    if (res == CUDA_SUCCESS) {
      const char *src = static_cast<const char *>(map) + (r.off - start);
      res = cu.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(SlotData(r.slot)), src, r.len,
                                 stream_);
      if (res == CUDA_SUCCESS) res = cu.cuStreamSynchronize(stream_);
      CUresult un = cu.cuMemHostUnregister(map);
      if (res == CUDA_SUCCESS) res = un;
    }
    munmap(map, len);
    if (res != CUDA_SUCCESS) return Fail("mmap + cuMemHostRegister: %s", CudaError(res).c_str());
    return {};
  }

  int fd_;
  CUstream stream_ = nullptr;
};

class MmapTransfer : public Transfer {
 public:
  Status Setup(const RowSpec &spec, const Gpu &gpu) override {
    spec_ = spec;
    gpu_ = gpu;
    if (!gpu.present) return Fail("mmap: needs a GPU");
    if (spec.write()) return Fail("mmap: reads only");
    return OpenFile(spec, false, fd_.out());
  }
  Status NewWorker(int, std::unique_ptr<Worker> *out) override {
    Buffer target;
    Status st = Buffer::Alloc(TargetMem(gpu_), spec_.io_size, &target);
    if (!st.ok()) return st;
    auto w = std::make_unique<MmapWorker>(std::move(target), spec_.io_size, fd_.get());
    st = w->Init();
    if (st.ok()) *out = std::move(w);
    return st;
  }
  std::string setting() const override {
    return "mmap + cuMemHostRegister(READ_ONLY) + one copy, per request";
  }

 private:
  RowSpec spec_;
  Gpu gpu_;
  Fd fd_;
};

}  // namespace

std::unique_ptr<Transfer> MakeMmapTransfer() { return std::make_unique<MmapTransfer>(); }

}  // namespace bench
