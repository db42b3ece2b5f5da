// SPDX-License-Identifier: Apache-2.0
// io_uring probes: each creates a small ring with one set of flags and closes
// it. NO_MMAP rings get their memory from us (two page-aligned pages), which
// is what device-initiated I/O needs (DESIGN.md).
#include <liburing.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "checks.h"
#include "gpu/cuda_api.h"
#include "ufile/device.h"

#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)  // Linux 6.5; Debian 12's headers predate it
#endif

namespace ufile::check {
namespace {

constexpr unsigned kEntries = 8;

int SysctlDisabled() {
  std::ifstream in("/proc/sys/kernel/io_uring_disabled");
  int v = -1;
  if (!(in >> v)) return -1;  // no such sysctl (Linux < 6.6): never disabled by it
  return v;
}

// 0 or -errno.
int ProbeLiburing(unsigned flags) {
  struct io_uring ring;
  struct io_uring_params p;
  std::memset(&p, 0, sizeof p);
  p.flags = flags;
  p.sq_thread_idle = 10;
  int ret = io_uring_queue_init_params(kEntries, &ring, &p);
  if (ret == 0) io_uring_queue_exit(&ring);
  return ret;
}

// 0 or -errno: a ring whose SQEs and rings live in memory we mapped.
int ProbeNoMmap(unsigned extra_flags) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *sqes = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *rings = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int ret = -ENOMEM;
  if (sqes != MAP_FAILED && rings != MAP_FAILED) {
    struct io_uring_params p;
    std::memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_NO_MMAP | extra_flags;
    p.sq_thread_idle = 10;
    p.sq_off.resv2 = reinterpret_cast<uintptr_t>(sqes);   // sq_off.user_addr in Linux >= 6.5
    p.cq_off.resv2 = reinterpret_cast<uintptr_t>(rings);  // cq_off.user_addr
    long fd = syscall(__NR_io_uring_setup, kEntries, &p);
    ret = fd >= 0 ? 0 : -errno;
    if (fd >= 0) close(static_cast<int>(fd));
  }
  if (sqes != MAP_FAILED) munmap(sqes, page);
  if (rings != MAP_FAILED) munmap(rings, page);
  return ret;
}

std::string Kernel() {
  struct utsname u;
  return uname(&u) == 0 ? u.release : "?";
}

// Why ret refused a ring, and what to do.
void Refused(Section &s, const std::string &key, int ret, int sysctl, bool basic) {
  const int err = -ret;
  std::string why, remedy;
  if (err == EPERM && sysctl == 2) {
    why = "disabled for everyone by sysctl kernel.io_uring_disabled=2";
    remedy = "sysctl -w kernel.io_uring_disabled=0 (as root)";
  } else if (err == EPERM && sysctl == 1) {
    why = "disabled for this user by sysctl kernel.io_uring_disabled=1";
    remedy =
        "add the user to the group in kernel.io_uring_group, or sysctl -w "
        "kernel.io_uring_disabled=0";
  } else if (err == EPERM || err == ENOSYS) {
    why = Format("refused by a seccomp filter or a kernel without io_uring (%s)",
                 err == EPERM ? "EPERM" : "ENOSYS");
    remedy =
        "containers: allow io_uring_setup/io_uring_enter/io_uring_register in the seccomp "
        "profile (docker run --security-opt seccomp=...); kernels: CONFIG_IO_URING=y";
  } else if (err == EINVAL) {
    why = "not supported by kernel " + Kernel() + " (EINVAL)";
    remedy = key.find("NO_MMAP") != std::string::npos
                 ? "needs Linux 6.5 or later (device-initiated I/O needs it)"
                 : "needs a newer kernel";
  } else if (err == ENOMEM) {
    why = "out of locked memory (ENOMEM)";
    remedy = "raise RLIMIT_MEMLOCK (ulimit -l); kernels before 5.12 charge rings to it";
  } else {
    why = Format("refused: %s", std::strerror(err));
  }
  if (basic) why += "; ufile uses its thread-pool engine (pread/pwrite) instead";
  s.Add(key, why, Status::kWarn, remedy);
}

// Which path device-initiated I/O (include/ufile/device.h) takes here, or
// why it cannot run: its kernels need a GPU.
void DevioPath(Section &s) {
  CudaApi &api = Cuda();
  if (!api.loaded || !api.available) {
    s.Add("device-initiated I/O", "cannot run here: no usable GPU (" + api.why_unavailable + ")");
    return;
  }
  char why[256] = {};
  if (ufile_devio_probe(why, sizeof why) == UFILE_DEVIO_PATH_NOCPU) {
    s.Add("device-initiated I/O", "no-CPU path: SQPOLL rings in GPU-mapped memory serve kernels",
          Status::kOk);
    return;
  }
  s.Add("device-initiated I/O", Format("proxy path: host threads serve the queues (%s)", why),
        Status::kWarn, "the no-CPU path needs io_uring SQPOLL with NO_MMAP (Linux 6.5+)");
}

}  // namespace

void CheckIoUring(Report &report) {
  Section &s = report.AddSection("io_uring");
  const int sysctl = SysctlDisabled();
  s.Add("kernel", Kernel());
  s.Add("sysctl kernel.io_uring_disabled",
        sysctl < 0 ? "absent (Linux < 6.6: no such switch)" : std::to_string(sysctl),
        sysctl > 0 ? Status::kWarn : Status::kInfo,
        sysctl > 0 ? "sysctl -w kernel.io_uring_disabled=0 to let every user create rings" : "");
  const int plain = ProbeLiburing(0);
  if (plain == 0)
    s.Add("io_uring", "available", Status::kOk);
  else
    Refused(s, "io_uring", plain, sysctl, true);
  if (plain != 0) return DevioPath(s);  // the variants can only fail the same way
  const int sqpoll = ProbeLiburing(IORING_SETUP_SQPOLL);
  if (sqpoll == 0)
    s.Add("io_uring SQPOLL", "available (kernel polling thread)", Status::kOk);
  else
    Refused(s, "io_uring SQPOLL", sqpoll, sysctl, false);
  const int nommap = ProbeNoMmap(0);
  if (nommap == 0)
    s.Add("io_uring NO_MMAP", "available (rings in user memory)", Status::kOk);
  else
    Refused(s, "io_uring NO_MMAP", nommap, sysctl, false);
  const int both = nommap == 0 ? ProbeNoMmap(IORING_SETUP_SQPOLL) : nommap;
  if (both == 0)
    s.Add("io_uring NO_MMAP + SQPOLL", "available (the rings of device-initiated I/O's no-CPU path)",
          Status::kOk);
  else if (nommap == 0)
    Refused(s, "io_uring NO_MMAP + SQPOLL", both, sysctl, false);
  DevioPath(s);
}

}  // namespace ufile::check
