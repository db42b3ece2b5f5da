// SPDX-License-Identifier: Apache-2.0
// cpu: pread/pwrite into host memory; raw: the storage ceiling, pread/pwrite
// into pinned memory with O_DIRECT (writes: buffered unless --odirect, which
// is the "raw pwrite from pinned memory" the buffered-write target names).
// Neither touches the GPU.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "xfer_util.h"

namespace bench {

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

Status OpenFile(const RowSpec &spec, bool direct, int *fd) {
  int flags = (spec.write() ? O_RDWR : O_RDONLY) | (direct ? O_DIRECT : 0);
  *fd = open(spec.file.c_str(), flags);
  if (*fd >= 0) return {};
  const int err = errno;
  if (direct && err == EINVAL)
    return Fail("%s: O_DIRECT is not supported on this filesystem", spec.file.c_str());
  return ErrnoFail(spec.file.c_str(), err);
}

Status FullIo(int fd, char *buf, size_t len, uint64_t off, bool write) {
  size_t done = 0;
  while (done < len) {
    const auto at = static_cast<off_t>(off + done);
    ssize_t r =
        write ? pwrite(fd, buf + done, len - done, at) : pread(fd, buf + done, len - done, at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoFail(write ? "pwrite" : "pread", errno);
    if (r == 0)
      return Fail("%s: end of file at offset %lld", write ? "pwrite" : "pread",
                  static_cast<long long>(at));
    done += static_cast<size_t>(r);
  }
  return {};
}

namespace {

class HostWorker : public BufferWorker {
 public:
  HostWorker(Buffer data, size_t io, int fd, bool write)
      : BufferWorker(std::move(data), io), fd_(fd), write_(write) {}
  Status Run(const Req *reqs, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      Status st = FullIo(fd_, SlotData(reqs[i].slot), reqs[i].len, reqs[i].off, write_);
      if (!st.ok()) return st;
    }
    return {};
  }

 private:
  int fd_;
  bool write_;
};

class HostTransfer : public Transfer {
 public:
  explicit HostTransfer(bool raw) : raw_(raw) {}

  Status Setup(const RowSpec &spec, const Gpu &gpu) override {
    spec_ = spec;
    mem_ = raw_ ? StagingMem(gpu) : MemKind::kHost;
    direct_ = raw_ ? (!spec.write() || spec.odirect) : spec.odirect;
    return OpenFile(spec, direct_, fd_.out());
  }

  Status NewWorker(int, std::unique_ptr<Worker> *out) override {
    Buffer buf;
    Status st = Buffer::Alloc(mem_, spec_.io_size, &buf);
    if (!st.ok()) return st;
    *out = std::make_unique<HostWorker>(std::move(buf), spec_.io_size, fd_.get(), spec_.write());
    return {};
  }

  std::string setting() const override {
    return std::string(direct_ ? "O_DIRECT" : "buffered") + ", " + MemKindName(mem_) + " memory";
  }

 private:
  bool raw_;
  RowSpec spec_;
  MemKind mem_ = MemKind::kHost;
  bool direct_ = false;
  Fd fd_;
};

}  // namespace

std::unique_ptr<Transfer> MakeHostTransfer(bool raw) {
  return std::make_unique<HostTransfer>(raw);
}

}  // namespace bench
