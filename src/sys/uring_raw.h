// SPDX-License-Identifier: Apache-2.0
// Raw io_uring system calls for rings whose memory the application provides
// (IORING_SETUP_NO_MMAP, Linux 6.5) and which need no SQ array
// (IORING_SETUP_NO_SQARRAY, 6.6). Debian's liburing 2.3 and kernel headers
// 6.1 predate both, so the flags and the params layout with its user_addr
// fields are defined here; the values are the kernel ABI.
// The calls go through a table that tests replace (UringSeam) to play an
// old kernel or a seccomp filter.
// Thread-safety: the table is read-only except in tests.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace ufile {

struct RawSqOffsets {
  uint32_t head, tail, ring_mask, ring_entries, flags, dropped, array, resv1;
  uint64_t user_addr;  // NO_MMAP: the SQE array's memory
};
struct RawCqOffsets {
  uint32_t head, tail, ring_mask, ring_entries, overflow, cqes, flags, resv1;
  uint64_t user_addr;  // NO_MMAP: the rings' memory
};
struct RawParams {
  uint32_t sq_entries, cq_entries, flags, sq_thread_cpu, sq_thread_idle, features, wq_fd;
  uint32_t resv[3];
  RawSqOffsets sq_off;
  RawCqOffsets cq_off;
};
static_assert(sizeof(RawParams) == 120, "struct io_uring_params is 120 bytes");

inline constexpr uint32_t kSetupSqpoll = 1u << 1;
inline constexpr uint32_t kSetupSqAff = 1u << 2;
inline constexpr uint32_t kSetupCqSize = 1u << 3;
inline constexpr uint32_t kSetupAttachWq = 1u << 5;
inline constexpr uint32_t kSetupNoMmap = 1u << 14;
inline constexpr uint32_t kSetupNoSqArray = 1u << 16;

inline constexpr uint32_t kSqNeedWakeup = 1u << 0;
inline constexpr uint32_t kSqCqOverflow = 1u << 1;
inline constexpr uint32_t kEnterGetEvents = 1u << 0;
inline constexpr uint32_t kEnterSqWakeup = 1u << 1;

inline constexpr unsigned kRegisterBuffers = 0;
inline constexpr unsigned kRegisterFiles = 2;

// The system calls, as a replaceable table. Each returns what the system
// call returns, or -errno (never sets errno for the caller to read).
struct UringCalls {
  int (*setup)(unsigned entries, RawParams *p);
  int (*enter)(int fd, unsigned to_submit, unsigned min_complete, unsigned flags);
  int (*reg)(int fd, unsigned opcode, const void *arg, unsigned nr_args);
};

// The table in use (the real calls unless a test installed others).
const UringCalls &Uring();

// Installs calls for one scope (tests).
class UringSeam {
 public:
  explicit UringSeam(const UringCalls &calls);
  ~UringSeam();
  UringSeam(const UringSeam &) = delete;
  UringSeam &operator=(const UringSeam &) = delete;

 private:
  UringCalls prev_;
};

// The real system calls (for a test seam that wraps them).
int RealSetup(unsigned entries, RawParams *p);
int RealEnter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags);
int RealRegister(int fd, unsigned opcode, const void *arg, unsigned nr_args);

}  // namespace ufile
