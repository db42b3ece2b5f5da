// SPDX-License-Identifier: Apache-2.0
// Shared by the devio CPU tests: files registered with ufile, host-memory
// queue sets (device = -1) on either path, and host threads standing in for
// GPU threads through the protocol of ufile/detail/device_queue.h (ThreadGroup).
#pragma once

#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"
#include "sys/sys_ops.h"
#include "ufile/detail/device_transfer.h"
#include "ufile/device.h"

namespace ufile::test {

// A file of random bytes registered with cuFileHandleRegister.
class RegisteredFile {
 public:
  RegisteredFile(const std::string &path, size_t size, uint64_t seed, int flags = O_RDWR)
      : path_(path), data_(RandomBytes(size, seed)) {
    WriteWholeFile(path_, data_);
    fd_ = open(path_.c_str(), flags | O_CLOEXEC);
    EXPECT_GE(fd_, 0) << path_ << ": " << strerror(errno);
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    const CUfileError_t e = cuFileHandleRegister(&fh_, &d);
    EXPECT_EQ(e.err, CU_FILE_SUCCESS);
  }
  ~RegisteredFile() {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
  }
  RegisteredFile(const RegisteredFile &) = delete;
  RegisteredFile &operator=(const RegisteredFile &) = delete;

  CUfileHandle_t handle() const { return fh_; }
  const std::vector<uint8_t> &data() const { return data_; }
  const std::string &path() const { return path_; }
  void Deregister() {
    cuFileHandleDeregister(fh_);
    fh_ = nullptr;
  }

 private:
  std::string path_;
  std::vector<uint8_t> data_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
};

// Host-only parameters: small queues; waits of 60 s, which only a hang
// reaches (at 5 s a 64 KiB read timed out with 8 tests at once on 2 cores);
// the tests of a timeout pass their own.
inline ufile_devio_params_t HostParams(uint32_t path) {
  ufile_devio_params_t p;
  ufile_devio_params_init(&p);
  p.device = -1;
  p.path = path;
  p.num_queues = 2;
  p.queue_depth = 8;
  p.staging_bytes = 64 * 1024;
  p.timeout_us = 60 * 1000 * 1000;
  p.sq_idle_ms = 50;
  p.wake_poll_us = 50;
  return p;
}

// Whether this machine gives the no-CPU path (else why).
inline bool NoCpuAvailable(std::string *why) {
  char buf[256] = {};
  const bool ok = ufile_devio_probe(buf, sizeof buf) == UFILE_DEVIO_PATH_NOCPU;
  *why = buf;
  return ok;
}

inline const char *PathName(uint32_t path) { return ufile_devio_path_name(static_cast<int>(path)); }

// Test name suffix for a path parameter.
inline std::string PathParamName(const ::testing::TestParamInfo<uint32_t> &info) {
  return PathName(info.param);
}

// A synchronous transfer by one host thread.
inline int64_t HostTransfer(const ufile_devio_view_t &v, unsigned q, unsigned file, bool write,
                            void *buf, uint64_t size, int64_t off, uint64_t timeout_ns = 0) {
  return devio::Transfer(devio::ThreadGroup{}, v, q, file, write, buf, size, off, timeout_ns);
}

// Whether every slot of every queue is free.
inline bool AllSlotsFree(const ufile_devio_view_t &v) {
  for (uint32_t qi = 0; qi < v.num_queues; ++qi)
    for (uint32_t i = 0; i < v.depth; ++i)
      if (devio::SlotState(v.queues[qi].slots[i]) != devio::kSlotFree) return false;
  return true;
}

// Expects every slot of every queue free, naming each that is not.
inline void ExpectAllSlotsFree(const ufile_devio_view_t &v) {
  for (uint32_t qi = 0; qi < v.num_queues; ++qi)
    for (uint32_t i = 0; i < v.depth; ++i)
      EXPECT_EQ(devio::SlotState(v.queues[qi].slots[i]), devio::kSlotFree) << qi << "/" << i;
}

// Reaps every queue until each slot is free, for 5 s at most: slots a failed
// or timed-out transfer abandoned are freed only when their late
// completions are reaped. Whether they all came back.
inline bool ReapUntilAllSlotsFree(const ufile_devio_view_t &v) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!AllSlotsFree(v)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    for (uint32_t qi = 0; qi < v.num_queues; ++qi) devio::Reap(v, v.queues[qi]);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Reads that take delay_ms (the proxy path's server stalls).
class SlowReads : public SysOps {
 public:
  explicit SlowReads(int delay_ms) : delay_ms_(delay_ms) {}
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    return SysOps::Pread(fd, buf, len, off);
  }

 private:
  int delay_ms_;
};

// Reads held until Open(), for 30 s at most (a wait that is not bounded then
// fails instead of hanging); counts the reads that have finished.
class HeldReads : public SysOps {
 public:
  ~HeldReads() override { Open(); }
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(30), [this] { return open_; });
    }
    const ssize_t n = SysOps::Pread(fd, buf, len, off);
    finished_.fetch_add(1);
    return n;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  int finished() const { return finished_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::atomic<int> finished_{0};
};

// Every submitted request was reaped once, none went stale or timed out.
inline void ExpectEachCompletionOnce(const ufile_devio_stats_t &s) {
  EXPECT_EQ(s.submitted, s.reaped) << "a completion was lost or consumed twice";
  EXPECT_EQ(s.stale, 0u);
  EXPECT_EQ(s.timeouts, 0u);
}

}  // namespace ufile::test
