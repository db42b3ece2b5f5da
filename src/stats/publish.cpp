// SPDX-License-Identifier: Apache-2.0
#include "stats/publish.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "base/log.h"

namespace ufile::stats {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

int g_published_pid = 0;  // pid whose name is in /dev/shm; 0: none
bool g_atexit_done = false;

size_t MappedSize() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (sizeof(Segment) + page - 1) / page * page;
}

void RemoveAtExit() {
  // A forked child inherits this handler: only the publisher removes the name.
  if (g_published_pid && g_published_pid == getpid())
    shm_unlink(SegmentName(g_published_pid).c_str());
  g_published_pid = 0;
}

void FillHeader(Segment *seg) {
  Header &h = seg->header;
  std::memcpy(h.magic, kMagic, sizeof h.magic);
  h.version = kVersion;
  h.shards = kShards;
  h.size = sizeof(Segment);
  h.pid = getpid();
  h.created_unix_ns.store(RealtimeNs(), kRelaxed);
  h.reset_unix_ns.store(RealtimeNs(), kRelaxed);
  std::memset(h.comm, 0, sizeof h.comm);
  if (FILE *f = std::fopen("/proc/self/comm", "re")) {
    if (std::fgets(h.comm, sizeof h.comm, f)) h.comm[std::strcspn(h.comm, "\n")] = '\0';
    std::fclose(f);
  }
}

bool WriteAll(int fd, const void *data, size_t len) {
  const char *p = static_cast<const char *>(data);
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// Creates the shared object name, replacing a stale one of a dead process.
int CreateObject(const std::string &name) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    UFILE_LOG_INFO("stats: replacing leftover /dev/shm%s of an earlier process", name.c_str());
    shm_unlink(name.c_str());
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  }
  if (fd >= 0) fchmod(fd, 0600);  // whatever the umask: same user only
  return fd;
}

}  // namespace

std::string SegmentName(int pid) {
  return "/ufile-stats-" + std::to_string(pid);
}

int HistBucket(uint64_t size) {
  const uint64_t kib = size / 1024;
  if (kib == 0) return 0;
  const int bucket = 64 - __builtin_clzll(kib);  // 1 + floor(log2(kib))
  return bucket < kHistBuckets ? bucket : kHistBuckets - 1;
}

uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

Segment *CreateSegment() {
  void *mem =
      mmap(nullptr, MappedSize(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    UFILE_LOG_ERROR("stats: cannot map %zu bytes for the counters: %s", MappedSize(),
                    std::strerror(errno));
    return nullptr;
  }
  auto *seg = new (mem) Segment();  // zeroed atomics
  FillHeader(seg);
  return seg;
}

bool Published() {
  return g_published_pid != 0 && g_published_pid == getpid();
}

bool Publish(Segment *seg) {
  if (Published()) return true;
  const std::string name = SegmentName(getpid());
  int fd = CreateObject(name);
  bool ok = fd >= 0 && ftruncate(fd, static_cast<off_t>(MappedSize())) == 0 &&
            WriteAll(fd, seg, sizeof(Segment));
  if (ok) {
    void *at = mmap(seg, MappedSize(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    ok = at == seg;
  }
  const int err = errno;
  if (fd >= 0) close(fd);
  if (!ok) {
    if (fd >= 0) shm_unlink(name.c_str());
    UFILE_LOG_WARN(
        "stats: cannot publish /dev/shm%s (%s); ufile-stats will not see this "
        "process, cuFileGetStatsL* still work",
        name.c_str(), std::strerror(err));
    return false;
  }
  g_published_pid = getpid();
  if (!g_atexit_done) g_atexit_done = std::atexit(RemoveAtExit) == 0;
  UFILE_LOG_INFO("stats: counters published as /dev/shm%s", name.c_str());
  return true;
}

void Unpublish() {
  if (!Published()) return;
  shm_unlink(SegmentName(g_published_pid).c_str());
  g_published_pid = 0;
}

void ZeroCounters(Segment *seg) {
  // A Shard is nothing but Counters (padding included, by its alignment).
  static_assert(sizeof(Shard) % sizeof(Counter) == 0);
  for (Shard &s : seg->shard) {
    auto *c = reinterpret_cast<Counter *>(&s);
    for (size_t i = 0; i < sizeof(Shard) / sizeof(Counter); ++i) c[i].store(0, kRelaxed);
  }
  for (auto &b : seg->header.last_batch_bytes) b.store(0, kRelaxed);
  seg->header.reset_unix_ns.store(RealtimeNs(), kRelaxed);
}

void DetachAfterFork(Segment *seg) {
  g_published_pid = 0;
  void *mem = mmap(seg, MappedSize(), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (mem == MAP_FAILED) return;  // keep the shared memory: only the counts suffer
  new (mem) Segment();
  FillHeader(seg);
}

}  // namespace ufile::stats
