// SPDX-License-Identifier: Apache-2.0
// cuFileHandleRegister and what the process holds on a file. POSIX record
// locks (fcntl F_SETLK) end when the process closes any descriptor of the
// file, so a refused registration (the fd registered already, the losing
// side of concurrent registrations) must open and close nothing. A lease
// (F_SETLEASE) breaks when the file is opened again, and the holder's SIGIO
// kills a process that does not handle it, so registering a leased file
// must not reopen it. The record locks are looked at from a forked child
// (open, fcntl, _exit only: safe under the sanitizers), with a deadline.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace ufile::test {
namespace {

CUfileOpError Register(int fd, CUfileHandle_t *fh) {
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  return cuFileHandleRegister(fh, &d).err;
}

// The exit status of child() run in a forked process, waited for up to
// 30 s (then killed: -1). A child killed by a signal gives 128 + signal.
template <class Child>
int InChild(Child child) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  if (pid < 0) return -2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// Whether another process sees this process's write lock on byte 0 of path.
bool LockedByUs(const std::string &path) {
  const pid_t self = getpid();
  return InChild([&] {
           const int fd = ::open(path.c_str(), O_RDWR);
           struct flock fl {};
           fl.l_type = F_WRLCK;
           fl.l_whence = SEEK_SET;
           fl.l_len = 1;
           if (fd < 0 || ::fcntl(fd, F_GETLK, &fl) != 0) return 2;
           return fl.l_type == F_WRLCK && fl.l_pid == self ? 0 : 1;
         }) == 0;
}

class HandleLocksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteWholeFile(path_, RandomBytes(8192, 3));
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  }
  void TearDown() override { CloseAll(); }
  // An O_RDWR descriptor of the file holding a write lock on byte 0.
  int OpenLocked() {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_len = 1;
    EXPECT_EQ(::fcntl(fd, F_SETLK, &fl), 0) << std::strerror(errno);
    EXPECT_TRUE(LockedByUs(path_));
    return fd;
  }
  TempDir dir_;
  std::string path_ = dir_.File("f");
};

TEST_F(HandleLocksTest, RefusedSecondRegistrationKeepsRecordLocks) {
  const int fd = OpenLocked();
  CUfileHandle_t fh = nullptr, again = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  EXPECT_TRUE(LockedByUs(path_)) << "registration dropped the lock";
  EXPECT_EQ(Register(fd, &again), CU_FILE_HANDLE_ALREADY_REGISTERED);
  EXPECT_TRUE(LockedByUs(path_)) << "the refused registration dropped the lock";
  cuFileHandleDeregister(fh);
  ::close(fd);
}

TEST_F(HandleLocksTest, LosingConcurrentRegistrationsKeepRecordLocks) {
  for (int round = 0; round < 10; ++round) {
    const int fd = OpenLocked();
    std::vector<CUfileHandle_t> fh(8, nullptr);
    std::vector<CUfileOpError> err(fh.size(), CU_FILE_SUCCESS);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (size_t i = 0; i < fh.size(); ++i)
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < static_cast<int>(fh.size())) std::this_thread::yield();
        err[i] = Register(fd, &fh[i]);
      });
    for (std::thread &t : threads) t.join();
    int won = 0;
    for (size_t i = 0; i < fh.size(); ++i) {
      if (err[i] == CU_FILE_SUCCESS) {
        ++won;
        continue;
      }
      EXPECT_EQ(err[i], CU_FILE_HANDLE_ALREADY_REGISTERED);
    }
    EXPECT_EQ(won, 1);
    EXPECT_TRUE(LockedByUs(path_)) << "round " << round << ": a refused registration "
                                   << "dropped the lock";
    for (size_t i = 0; i < fh.size(); ++i)
      if (err[i] == CU_FILE_SUCCESS) cuFileHandleDeregister(fh[i]);
    ::close(fd);
  }
}

// SIGIO ignored for the test: a broken lease then shows in F_GETLEASE (after
// the breaker's open waited out /proc/sys/fs/lease-break-time) instead of
// killing the test runner.
class IgnoreSigio {
 public:
  IgnoreSigio() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGIO, &ignore, &old_);
  }
  ~IgnoreSigio() { sigaction(SIGIO, &old_, nullptr); }
  IgnoreSigio(const IgnoreSigio &) = delete;
  IgnoreSigio &operator=(const IgnoreSigio &) = delete;

 private:
  struct sigaction old_ {};
};

TEST_F(HandleLocksTest, LeaseHolderKeepsItsLeaseThroughRegistration) {
  IgnoreSigio ignore;
  for (auto [acc, lease] : {std::pair{O_RDWR, F_WRLCK}, std::pair{O_RDONLY, F_RDLCK}}) {
    const char *what = lease == F_WRLCK ? "write lease" : "read lease";
    const int fd = ::open(path_.c_str(), acc | O_CLOEXEC);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    if (::fcntl(fd, F_SETLEASE, lease) != 0) {
      const int err = errno;
      ::close(fd);
      GTEST_SKIP() << "F_SETLEASE is refused on " << path_
                   << "'s file system: " << std::strerror(err);
    }
    CUfileHandle_t fh = nullptr;
    ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS) << what;
    EXPECT_EQ(::fcntl(fd, F_GETLEASE), lease) << what << ": registration broke it";
    std::vector<uint8_t> buf(8192);
    EXPECT_EQ(cuFileRead(fh, buf.data(), buf.size(), 0, 0), 8192) << what;
    EXPECT_EQ(buf, RandomBytes(8192, 3)) << what;
    cuFileHandleDeregister(fh);
    EXPECT_EQ(::fcntl(fd, F_GETLEASE), lease) << what << ": deregistration broke it";
    ::fcntl(fd, F_SETLEASE, F_UNLCK);
    ::close(fd);
  }
}

}  // namespace
}  // namespace ufile::test
