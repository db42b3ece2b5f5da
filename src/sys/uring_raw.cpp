// SPDX-License-Identifier: Apache-2.0
#include "sys/uring_raw.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ufile {
namespace {

UringCalls g_calls = {RealSetup, RealEnter, RealRegister};

int Ret(long r) { return r < 0 ? -errno : static_cast<int>(r); }

}  // namespace

int RealSetup(unsigned entries, RawParams *p) {
  return Ret(syscall(__NR_io_uring_setup, entries, p));
}

int RealEnter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags) {
  return Ret(syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, nullptr, 0));
}

int RealRegister(int fd, unsigned opcode, const void *arg, unsigned nr_args) {
  return Ret(syscall(__NR_io_uring_register, fd, opcode, arg, nr_args));
}

const UringCalls &Uring() { return g_calls; }

UringSeam::UringSeam(const UringCalls &calls) : prev_(g_calls) { g_calls = calls; }
UringSeam::~UringSeam() { g_calls = prev_; }

}  // namespace ufile
