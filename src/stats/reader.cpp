// SPDX-License-Identifier: Apache-2.0
#include "stats/reader.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ufile::stats {
namespace {

Sample Fail(Sample::Kind kind, int pid, std::string detail) {
  Sample s;
  s.kind = kind;
  s.pid = pid;
  s.detail = std::move(detail);
  return s;
}

std::string Path(int pid) {
  return "/dev/shm" + SegmentName(pid);
}

// Checks and sums a mapped segment of len bytes.
Sample FromMapping(int pid, const void *mem, size_t len) {
  const auto *seg = static_cast<const Segment *>(mem);
  const Header &h = seg->header;
  if (len < sizeof(Header) || std::memcmp(h.magic, kMagic, sizeof h.magic) != 0)
    return Fail(Sample::Kind::kInvalid, pid, Path(pid) + " is not a ufile statistics segment");
  if (h.version != kVersion || h.size != sizeof(Segment) || len < sizeof(Segment) ||
      h.shards != kShards)
    return Fail(Sample::Kind::kInvalid, pid,
                Path(pid) + " has layout version " + std::to_string(h.version) +
                    "; this ufile-stats reads version " + std::to_string(kVersion) +
                    " (use the ufile-stats of the library the process runs)");
  Sample s;
  s.kind = Sample::Kind::kOk;
  s.pid = h.pid;
  s.comm.assign(h.comm, strnlen(h.comm, sizeof h.comm));
  s.created_unix_ns = h.created_unix_ns.load(std::memory_order_relaxed);
  s.reset_unix_ns = h.reset_unix_ns.load(std::memory_order_relaxed);
  s.totals = Sum(*seg);
  return s;
}

}  // namespace

bool ProcessAlive(int pid) {
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

Sample ReadSample(int pid) {
  const std::string name = SegmentName(pid);
  int fd = shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    if (err == EACCES)
      return Fail(Sample::Kind::kDenied, pid,
                  Path(pid) +
                      " belongs to another user; run ufile-stats as "
                      "the user of process " +
                      std::to_string(pid));
    if (!ProcessAlive(pid))
      return Fail(Sample::Kind::kAbsent, pid, "no process " + std::to_string(pid));
    return Fail(Sample::Kind::kAbsent, pid,
                "process " + std::to_string(pid) + " publishes no ufile statistics (" +
                    std::strerror(err) +
                    "): it does not use ufile, or its statistics level "
                    "is 0; set \"profile\": {\"cufile_stats\": 3} in the file named by "
                    "CUFILE_ENV_PATH_JSON, or call cuFileSetStatsLevel");
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Header))) {
    close(fd);
    return Fail(Sample::Kind::kInvalid, pid,
                Path(pid) + " is too small to be a statistics segment");
  }
  const size_t len = static_cast<size_t>(st.st_size);
  void *mem = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (mem == MAP_FAILED) return Fail(Sample::Kind::kInvalid, pid, "cannot map " + Path(pid));
  Sample s = FromMapping(pid, mem, len);
  munmap(mem, len);
  if (s.kind == Sample::Kind::kOk && !ProcessAlive(pid)) {
    s.kind = Sample::Kind::kStale;
    s.detail = Path(pid) + " is stale: process " + std::to_string(pid) +
               " is gone (it ended without removing it); remove it with: rm " + Path(pid);
  }
  return s;
}

}  // namespace ufile::stats
