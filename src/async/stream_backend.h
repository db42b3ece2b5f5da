// SPDX-License-Identifier: Apache-2.0
// The CUDA calls of stream-ordered I/O behind one seam: the real one talks
// to libcuda; a test installs a fake GPU (streams as host threads) to drive
// the whole protocol of async/stream_ops.h on a machine without one.
// Thread-safety: Current() may be called from any thread; Install() is for
// tests and must not race with stream operations.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace ufile {

class StreamBackend {
 public:
  virtual ~StreamBackend() = default;
  // Whether streams can be used at all; *why when not.
  virtual bool Usable(std::string *why);
  // The context of stream (CUDA refuses a stream it does not know).
  virtual CUresult Context(CUstream stream, CUcontext *ctx);
  virtual bool Capturing(CUstream stream);
  virtual CUresult WriteValue(CUstream stream, uint32_t *addr, uint32_t value);
  // The stream waits until *addr == value.
  virtual CUresult WaitValue(CUstream stream, uint32_t *addr, uint32_t value);
  virtual CUresult Synchronize(CUstream stream);
  // Whether flag words must be in pinned memory (a real GPU reads them).
  virtual bool NeedsPinnedFlags() const { return true; }

  static StreamBackend &Current();
  // Installs b (nullptr: the real one); returns the previous one.
  static StreamBackend *Install(StreamBackend *b);
};

}  // namespace ufile
