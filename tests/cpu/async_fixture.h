// SPDX-License-Identifier: Apache-2.0
// Shared by the batch and stream API tests: a driver opened with a known
// configuration (2 I/O threads, the thread-pool engine so every syscall goes
// through the SysOps seam, the log in a temporary file), registered files,
// and SysOps that hold I/O at a gate or fail it.
#pragma once

#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {

// Holds every pread/pwrite until Open(); counts the calls that entered.
class GateOps : public SysOps {
 public:
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    Pass();
    return SysOps::Pread(fd, buf, len, off);
  }
  ssize_t Pwrite(int fd, const void *buf, size_t len, off_t off) override {
    Pass();
    return SysOps::Pwrite(fd, buf, len, off);
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until n calls are held at (or went through) the gate.
  bool WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return entered_ >= n; });
  }
  int entered() {
    std::lock_guard<std::mutex> lock(mu_);
    return entered_;
  }

 private:
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++entered_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
  bool open_ = false;
};

// Fails pread/pwrite on the file fd names with err.
class FailFdOps : public SysOps {
 public:
  FailFdOps(int fd, int err) : file_(fd), err_(err) {}
  ssize_t Pread(int fd, void *buf, size_t len, off_t off) override {
    if (file_.Names(fd)) return Fail();
    return SysOps::Pread(fd, buf, len, off);
  }
  ssize_t Pwrite(int fd, const void *buf, size_t len, off_t off) override {
    if (file_.Names(fd)) return Fail();
    return SysOps::Pwrite(fd, buf, len, off);
  }

 private:
  ssize_t Fail() {
    errno = err_;
    return -1;
  }
  FileId file_;
  int err_;
};

class AsyncFixture : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(0); }
  void TearDown() override {
    for (CUfileHandle_t fh : handles_) cuFileHandleDeregister(fh);
    for (int fd : fds_) close(fd);
    while (cuFileUseCount() > 0) cuFileDriverClose();
  }

  // Closes the driver and opens it again with 2 I/O threads and, when
  // batch_size > 0, that properties.io_batchsize.
  void Reopen(size_t batch_size) {
    while (cuFileUseCount() > 0) ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 2).err,
              CU_FILE_SUCCESS);
    if (batch_size) {
      ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, batch_size).err,
                CU_FILE_SUCCESS);
    }
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  }

  // A registered file of `size` random bytes (seed) opened with flags.
  // checked: registered with ufile's reopening refused (RegisterFdChecked).
  CUfileHandle_t OpenFile(const std::string &name, size_t size, uint64_t seed, int flags = O_RDWR,
                          int *fd_out = nullptr, bool checked = false) {
    const std::string path = dir_.File(name);
    WriteWholeFile(path, RandomBytes(size, seed));
    int fd = open(path.c_str(), flags);
    EXPECT_GE(fd, 0) << path;
    fds_.push_back(fd);
    CUfileHandle_t fh = nullptr;
    EXPECT_EQ(checked ? RegisterFdChecked(fd, &fh) : RegisterFd(fd, &fh), CU_FILE_SUCCESS);
    handles_.push_back(fh);
    if (fd_out) *fd_out = fd;
    return fh;
  }

  std::string Log() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  TempDir dir_;
  std::string log_ = dir_.File("cufile.log");
  ScopedEnv log_env_{"CUFILE_LOGFILE_PATH", log_};
  ScopedEnv engine_env_{"UFILE_ENGINE", std::string("thread_pool")};
  std::vector<int> fds_;
  std::vector<CUfileHandle_t> handles_;
};

}  // namespace ufile::test
