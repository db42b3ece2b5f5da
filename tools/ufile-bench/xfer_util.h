// SPDX-License-Identifier: Apache-2.0
// Pieces the transfer types share: opening the file, whole-range pread and
// pwrite, and a worker base that owns its data buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "runner.h"

namespace bench {

// Opens spec.file for spec.op (O_RDONLY or O_RDWR), adding O_DIRECT when
// direct; explains EINVAL from filesystems that refuse O_DIRECT.
Status OpenFile(const RowSpec &spec, bool direct, int *fd);

// pread/pwrite of exactly len bytes (retried when short); end of file is an error.
Status FullIo(int fd, char *buf, size_t len, uint64_t off, bool write);

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  ~Fd();
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int *out() { return &fd_; }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// A worker whose data lives in one buffer, slot i at i * io_size.
class BufferWorker : public Worker {
 public:
  BufferWorker(Buffer data, size_t io_size) : data_(std::move(data)), io_(io_size) {}
  char *SlotData(size_t slot) override { return data_.data() + slot * io_; }
  bool SlotOnDevice() const override { return data_.on_device(); }

 protected:
  Buffer data_;
  size_t io_;
};

// The memory a row's destination (read) or source (write) lives in: the GPU,
// or host memory when there is none.
inline MemKind TargetMem(const Gpu &gpu) {
  return gpu.present ? MemKind::kDevice : MemKind::kHost;
}
// Pinned memory with a GPU, else plain host memory.
inline MemKind StagingMem(const Gpu &gpu) {
  return gpu.present ? MemKind::kPinned : MemKind::kHost;
}

// The transfer types (xfer_*.cpp); MakeTransfer picks one.
std::unique_ptr<Transfer> MakeHostTransfer(bool raw);
std::unique_ptr<Transfer> MakeNaiveTransfer();
std::unique_ptr<Transfer> MakeMmapTransfer();
std::unique_ptr<Transfer> MakeCopyTransfer();
std::unique_ptr<Transfer> MakeCuFileTransfer(Xfer xfer);

}  // namespace bench
