// SPDX-License-Identifier: Apache-2.0
#include "engine/engine.h"
#include "engine/posix_io.h"

namespace ufile {
namespace {

class PosixEngine final : public Engine {
 public:
  const char *name() const override { return "posix"; }
  Result<size_t> Read(int fd, void *buf, size_t len, off_t off, size_t align) override {
    return PreadFull(fd, buf, len, off, align);
  }
  Result<size_t> Write(int fd, const void *buf, size_t len, off_t off, size_t align) override {
    return PwriteFull(fd, buf, len, off, align);
  }
};

}  // namespace

std::unique_ptr<Engine> MakePosixEngine() { return std::make_unique<PosixEngine>(); }

}  // namespace ufile
