// SPDX-License-Identifier: Apache-2.0
// How the layers above orchestration watch it without orchestration calling
// up: the statistics install one Observer when the library loads; the
// driver reports its sessions to it and RunIo (core/io_request.h) each
// cuFileRead/Write it timed. With none installed every report is dropped.
// Thread-safety: Install once, before any I/O (a static initializer); the
// reports come from any thread.
#pragma once

#include <cstdint>
#include <memory>

namespace ufile {
struct Config;
}

namespace ufile::observe {

// One cuFileRead/Write, as the counters see it.
struct IoSample {
  bool write = false;
  bool ok = false;
  uint64_t size = 0;   // bytes asked for
  uint64_t bytes = 0;  // bytes done (ok)
  uint64_t t0 = 0, t1 = 0;  // CLOCK_MONOTONIC ns around the transfer
  int device = -1;         // CUDA ordinal when device memory was copied, else -1
  bool posix = false;      // through a descriptor without O_DIRECT
  bool unaligned = false;  // offset or size off the file's block
};

struct Observer {
  // A driver session starts with cfg; it ended.
  void (*driver_open)(const std::shared_ptr<const Config> &cfg);
  void (*driver_close)();
  // A synchronous read or write finished while a statistics level was on.
  void (*io_done)(const IoSample &io);
};

void Install(const Observer *observer);

void DriverOpened(const std::shared_ptr<const Config> &cfg);
void DriverClosed();
void IoDone(const IoSample &io);

}  // namespace ufile::observe
