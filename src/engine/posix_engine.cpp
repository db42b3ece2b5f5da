// SPDX-License-Identifier: Apache-2.0
#include "engine/engine.h"
#include "engine/posix_io.h"

namespace ufile {

void Engine::RunMany(EngineOp *ops, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    EngineOp &op = ops[i];
    if (op.nowait) {
      op.result = ReadCached(op.fd, op.buf, op.len, op.off, op.fixed);
      continue;
    }
    op.result = op.write ? Write(op.fd, op.buf, op.len, op.off, op.align, op.fixed)
                         : Read(op.fd, op.buf, op.len, op.off, op.align, op.fixed);
  }
}

size_t Engine::ReadCached(int fd, void *buf, size_t len, off_t off, int) {
  return PreadCached(fd, buf, len, off);
}

namespace {

class PosixEngine final : public Engine {
 public:
  const char *name() const override { return "posix"; }
  Result<size_t> Read(int fd, void *buf, size_t len, off_t off, size_t align, int) override {
    return PreadFull(fd, buf, len, off, align);
  }
  Result<size_t> Write(int fd, const void *buf, size_t len, off_t off, size_t align, int) override {
    return PwriteFull(fd, buf, len, off, align);
  }
};

}  // namespace

std::unique_ptr<Engine> MakePosixEngine() { return std::make_unique<PosixEngine>(); }

}  // namespace ufile
