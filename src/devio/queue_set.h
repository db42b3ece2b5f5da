// SPDX-License-Identifier: Apache-2.0
// QueueSet: what ufile_devio_create builds (include/ufile/device.h): the
// files' own descriptors, the staging memory, one Ring per queue, the
// device-memory control block and the host helper of the path in use (the
// Waker for no-CPU, the Proxy otherwise). Destroy() refuses (-EBUSY) while
// device code holds a slot or any submitted request is unfinished, so no
// memory a kernel or the kernel's I/O may still touch is ever freed.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "devio/control_memory.h"
#include "devio/host_region.h"
#include "devio/proxy.h"
#include "devio/ring.h"
#include "devio/waker.h"
#include "ufile/device.h"

namespace ufile::devio {

class QueueSet {
 public:
  ~QueueSet();
  QueueSet(const QueueSet &) = delete;
  QueueSet &operator=(const QueueSet &) = delete;

  // 0 and *out, or -errno (see ufile_devio_create).
  static int Create(const CUfileHandle_t *handles, unsigned n, const ufile_devio_params_t &params,
                    std::unique_ptr<QueueSet> *out);
  // 0: torn down (delete it); -EBUSY: still in use, nothing freed.
  int Destroy(unsigned flags);
  const ufile_devio_view_t &view() const { return view_; }
  int path() const { return static_cast<int>(view_.path); }
  int Stats(ufile_devio_stats_t *out);

  // Tries the no-CPU path's ring setup; false with *why when refused.
  static bool ProbeNoCpu(std::string *why);
  // Checks and completes params (defaults for zero fields); -EINVAL if bad.
  static int Normalize(ufile_devio_params_t *p);
  // Tests: sets created from now on rewrite an LL area whole every n entries
  // of its slot (0: the default, 2^20, too rare to exercise). Returns the
  // previous value.
  static uint32_t SetLLScrubEveryForTests(uint32_t n);

 private:
  QueueSet() = default;
  int OpenFiles(const CUfileHandle_t *handles, unsigned n);
  // The primary context of p_.device (none for a host-only set): 0 or -errno.
  int RetainDevice();
  // One ring per queue, for the no-CPU path where p_ allows and it works,
  // else the proxy's (and its LL areas); *path: the path they serve.
  int BuildRings(uint32_t *path);
  // The Waker (no-CPU) or the Proxy that serves the rings.
  void StartHelper(uint32_t path);
  bool BuildUringRings(std::string *why);
  void BuildProxyRings();
  int BuildControl();
  bool Idle(bool force, std::string *what);
  // LL: the largest LL read, and one queue's LL areas in bytes.
  uint32_t LLMax() const {
    return static_cast<uint32_t>(std::min<uint64_t>(p_.staging_bytes, UFILE_DEVIO_LL_MAX_BYTES));
  }
  size_t LLQueueBytes() const { return p_.queue_depth * UFILE_DEVIO_LL_STRIDE(LLMax()); }
  void Teardown();

  ufile_devio_params_t p_{};
  CUcontext ctx_ = nullptr;  // retained primary context; null for host-only sets
  std::vector<int> fds_;     // the fixed-file table: our own descriptors
  std::vector<size_t> aligns_;
  std::vector<ufile_devio_file_t> files_;
  std::unique_ptr<HostRegion> staging_;
  std::unique_ptr<HostRegion> ll_;  // UFILE_DEVIO_OPT_LL on the proxy path: the LL areas
  std::vector<std::unique_ptr<Ring>> rings_;
  ControlMemory control_;
  size_t off_queues_ = 0, off_files_ = 0, off_qctl_ = 0, off_slots_ = 0, off_closing_ = 0;
  std::unique_ptr<Waker> waker_;
  std::unique_ptr<Proxy> proxy_;
  ufile_devio_view_t view_{};
  std::mutex mu_;
  bool closing_ = false;  // guarded by mu_
  bool torn_down_ = false;
};

}  // namespace ufile::devio
