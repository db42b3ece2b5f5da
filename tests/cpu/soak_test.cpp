// SPDX-License-Identifier: Apache-2.0
// Verify soak: threads (UFILE_SOAK_THREADS, default 4) do random reads and
// writes through cuFileRead/cuFileWrite on one file, through a buffered and
// an O_DIRECT handle of it at once: offsets anywhere (reads also across the
// end of file), sizes 1 B..2 MiB (log-uniform, a quarter page-aligned),
// memory at any alignment, registered (for the whole run, or for one I/O)
// and unregistered. A shadow copy models the file. A write holds the 64 KiB
// regions it covers exclusively and updates the shadow when it returned; a
// read holds them shared, so it sees settled data only, and every byte it
// returns is compared with the shadow. Around every request the caller's
// memory must keep its fill byte, and a write's source must not change. At
// the end the whole file is compared with the shadow. The first half runs
// on io_uring (when usable), the second on the POSIX engine.
// Duration: UFILE_SOAK_SECONDS (default 10). A long run, for example
//   UFILE_SOAK_SECONDS=3600 UFILE_SOAK_THREADS=8 build/tests/cpu_soak_test
// (run the binary itself: ctest stops a test after 300 s). UFILE_SOAK_SEED
// picks the random streams; the interleaving still varies from run to run.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/file_bytes.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kMaxIo = 2 << 20;
constexpr size_t kPage = 4096;
constexpr size_t kRegion = 64 << 10;         // lock granularity, whole pages
constexpr size_t kMem = kMaxIo + 3 * kPage;  // a thread's buffer: request + offsets

size_t EnvOr(const char *name, size_t dflt) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : dflt;
}

// splitmix64: fast, good enough for offsets, sizes and data.
struct Rng {
  uint64_t s;
  uint64_t operator()() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n ? (*this)() % n : 0; }
  void Fill(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
      const uint64_t v = (*this)();
      std::memcpy(p + i, &v, std::min<size_t>(8, n - i));
    }
  }
};

// Shared (read) or exclusive (write) hold on the regions covering a range,
// taken in ascending order so that two holders cannot deadlock.
class RegionLocks {
 public:
  explicit RegionLocks(size_t file_size) : mu_((file_size + kRegion - 1) / kRegion) {}
  class Hold {
   public:
    Hold(RegionLocks &l, size_t off, size_t len, bool excl) : l_(l), excl_(excl) {
      first_ = std::min(off / kRegion, l.mu_.size());
      last_ = len ? std::min((off + len - 1) / kRegion + 1, l.mu_.size()) : first_;
      for (size_t i = first_; i < last_; ++i) excl_ ? l_.mu_[i].lock() : l_.mu_[i].lock_shared();
    }
    ~Hold() {
      for (size_t i = first_; i < last_; ++i)
        excl_ ? l_.mu_[i].unlock() : l_.mu_[i].unlock_shared();
    }

   private:
    RegionLocks &l_;
    bool excl_;
    size_t first_, last_;
  };

 private:
  std::vector<std::shared_mutex> mu_;
};

struct Counts {
  uint64_t reads = 0, writes = 0, bytes_read = 0, bytes_written = 0, short_reads = 0;
  uint64_t direct = 0, registered = 0, registered_once = 0, aligned = 0;
  uint64_t errors = 0, mismatches = 0, guard_damage = 0;
  void Add(const Counts &o) {
    reads += o.reads, writes += o.writes, bytes_read += o.bytes_read;
    bytes_written += o.bytes_written, short_reads += o.short_reads, direct += o.direct;
    registered += o.registered, registered_once += o.registered_once, aligned += o.aligned;
    errors += o.errors, mismatches += o.mismatches, guard_damage += o.guard_damage;
  }
};

struct Options {
  size_t threads = 4;
  std::chrono::milliseconds duration{10000};
  size_t max_ops = 0;  // per thread and phase; 0: until the duration is over
  unsigned write_pct = 50;
  uint64_t seed = 1;
};

size_t Differences(const uint8_t *a, const uint8_t *b, size_t n) {
  if (std::memcmp(a, b, n) == 0) return 0;
  size_t d = 0;
  for (size_t i = 0; i < n; ++i) d += a[i] != b[i];
  return d;
}

// Whether [p, p + n) holds bytes other than `fill` (all bytes equal the
// first iff the range equals itself shifted by one: one memcmp).
bool NotFill(const uint8_t *p, size_t n, uint8_t fill) {
  return n > 0 && (p[0] != fill || std::memcmp(p, p + 1, n - 1) != 0);
}

class Soak {
 public:
  Soak(const Options &o, std::string path, std::vector<uint8_t> shadow)
      : o_(o), path_(std::move(path)), shadow_(std::move(shadow)), locks_(shadow_.size()) {}

  std::vector<uint8_t> &shadow() { return shadow_; }
  const Counts &counts() const { return total_; }

  // One phase: the driver open on the engine asked for, both handles
  // registered, o_.threads workers until the time or op budget is spent.
  void RunPhase(bool io_uring, bool with_direct, int phase) {
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, io_uring).err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 256).err,
              CU_FILE_SUCCESS);  // 2 MiB requests split into 8 chunks
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 4).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    const int fd = ::open(path_.c_str(), O_RDWR);
    const int dfd = with_direct ? ::open(path_.c_str(), O_RDWR | O_DIRECT) : -1;
    ASSERT_GE(fd, 0);
    fh_[0] = Register(fd);
    fh_[1] = dfd >= 0 ? Register(dfd) : nullptr;
    const auto end = std::chrono::steady_clock::now() + o_.duration;
    std::vector<std::thread> threads;
    std::vector<Counts> counts(o_.threads);
    for (size_t t = 0; t < o_.threads; ++t)
      threads.emplace_back([&, t] { Worker(o_.seed * 1000 + phase * 100 + t, end, &counts[t]); });
    for (std::thread &th : threads) th.join();
    for (const Counts &c : counts) total_.Add(c);
    for (CUfileHandle_t fh : fh_)
      if (fh) cuFileHandleDeregister(fh);
    ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    ::close(fd);
    if (dfd >= 0) ::close(dfd);
  }

 private:
  static CUfileHandle_t Register(int fd) {
    CUfileDescr_t d{};
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = nullptr;
    EXPECT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_SUCCESS);
    return fh;
  }

  void Worker(uint64_t seed, std::chrono::steady_clock::time_point end, Counts *c) {
    Rng rng{seed};
    auto *kept = static_cast<uint8_t *>(std::aligned_alloc(kPage, kMem));  // registered all along
    auto *plain = static_cast<uint8_t *>(std::aligned_alloc(kPage, kMem));
    std::vector<uint8_t> src(kMaxIo);
    if (cuFileBufRegister(kept, kMem, 0).err != CU_FILE_SUCCESS) ++c->errors;
    for (size_t n = 0; o_.max_ops ? n < o_.max_ops : std::chrono::steady_clock::now() < end; ++n)
      OneOp(rng, kept, plain, src.data(), c);
    if (cuFileBufDeregister(kept).err != CU_FILE_SUCCESS) ++c->errors;
    std::free(kept);
    std::free(plain);
  }

  void OneOp(Rng &rng, uint8_t *kept, uint8_t *plain, uint8_t *src, Counts *c) {
    const size_t fsize = shadow_.size();
    const bool write = rng.Below(100) < o_.write_pct;
    const bool direct = fh_[1] && rng.Below(2);
    const bool aligned = rng.Below(4) == 0;
    const int bits = static_cast<int>(rng.Below(22));
    size_t size = std::min(kMaxIo, (size_t{1} << bits) + rng.Below(size_t{1} << bits));
    size_t off = rng.Below(write ? fsize : fsize + kPage);  // reads may start past the end
    if (aligned) {
      size = std::max(kPage, size / kPage * kPage);
      off = off / kPage * kPage;
    }
    if (write) size = std::min(size, fsize - off);  // the file never grows
    // Memory: the kept registration, an unregistered base at any alignment,
    // or a registration for this I/O only.
    const unsigned kind = static_cast<unsigned>(rng.Below(3));
    uint8_t *mem = kind == 0 ? kept : plain;
    uint8_t *base = mem;
    size_t boff = rng.Below(2 * kPage);
    if (kind == 1 && !aligned) base += rng.Below(kPage);
    if (aligned) boff = boff / kPage * kPage;
    if (kind == 2 && cuFileBufRegister(plain, kMem, 0).err != CU_FILE_SUCCESS) ++c->errors;
    const uint8_t fill = static_cast<uint8_t>(rng());
    std::memset(mem, fill, kMem);
    const size_t start = static_cast<size_t>(base - mem) + boff;  // request's memory in mem
    c->direct += direct, c->aligned += aligned, c->registered += kind != 1;
    c->registered_once += kind == 2;
    CUfileHandle_t fh = fh_[direct ? 1 : 0];
    if (write) {
      rng.Fill(src, size);
      std::memcpy(mem + start, src, size);
      RegionLocks::Hold hold(locks_, off, size, true);
      const ssize_t r =
          cuFileWrite(fh, base, size, static_cast<off_t>(off), static_cast<off_t>(boff));
      if (r == static_cast<ssize_t>(size)) {
        std::memcpy(shadow_.data() + off, src, size);
      } else {
        Report("write", r, size, off, direct, c);
      }
      if (std::memcmp(mem + start, src, size) != 0) ++c->guard_damage;  // source changed
      ++c->writes, c->bytes_written += size;
    } else {
      RegionLocks::Hold hold(locks_, off, size, false);
      const ssize_t r =
          cuFileRead(fh, base, size, static_cast<off_t>(off), static_cast<off_t>(boff));
      const size_t want = off >= fsize ? 0 : std::min(size, fsize - off);
      if (r == static_cast<ssize_t>(want)) {
        c->mismatches += Differences(mem + start, shadow_.data() + off, want);
      } else {
        Report("read", r, size, off, direct, c);
      }
      ++c->reads, c->bytes_read += want, c->short_reads += want < size;
    }
    c->guard_damage += NotFill(mem, start, fill);
    c->guard_damage += NotFill(mem + start + size, kMem - start - size, fill);
    if (kind == 2 && cuFileBufDeregister(plain).err != CU_FILE_SUCCESS) ++c->errors;
  }

  void Report(const char *what, ssize_t r, size_t size, size_t off, bool direct, Counts *c) {
    if (++c->errors <= 5)
      std::fprintf(stderr, "soak: %s of %zu at %zu (%s) returned %zd, errno %d\n", what, size, off,
                   direct ? "O_DIRECT" : "buffered", r, errno);
  }

  Options o_;
  std::string path_;
  std::vector<uint8_t> shadow_;
  RegionLocks locks_;
  CUfileHandle_t fh_[2] = {nullptr, nullptr};  // buffered, O_DIRECT (or null)
  Counts total_;
};

struct SoakResult {
  Counts counts;
  size_t file_mismatches = 0;
};

// Runs both phases on a fresh random file; corrupt (tests of the test) flips
// the first MiB of the shadow before the run.
SoakResult RunSoak(const Options &o, bool corrupt = false) {
  while (cuFileUseCount() > 0) cuFileDriverClose();
  TempDir dir;
  const std::string path = dir.File("soak");
  const size_t fsize = 24 * (1 << 20) + 4321;
  std::vector<uint8_t> data = RandomBytes(fsize, o.seed);
  WriteWholeFile(path, data);
  if (corrupt)
    for (size_t i = 0; i < (1 << 20); ++i) data[i] ^= 0x5A;
  const bool direct = DirectIoSupported(dir.path());
  if (!direct) std::printf("soak: no O_DIRECT in %s, buffered handle only\n", dir.path().c_str());
  Soak soak(o, path, std::move(data));
  soak.RunPhase(true, direct, 0);
  soak.RunPhase(false, direct, 1);
  SoakResult res;
  res.counts = soak.counts();
  const std::vector<uint8_t> file = FileBytes(path);
  EXPECT_EQ(file.size(), fsize) << "the file changed size";
  res.file_mismatches =
      Differences(file.data(), soak.shadow().data(), std::min(file.size(), fsize));
  return res;
}

TEST(Soak, RandomIoMatchesTheShadow) {
  Options o;
  o.threads = EnvOr("UFILE_SOAK_THREADS", 4);
  o.duration = std::chrono::milliseconds(EnvOr("UFILE_SOAK_SECONDS", 10) * 1000 / 2);  // per phase
  o.seed = EnvOr("UFILE_SOAK_SEED", 1);
  const SoakResult r = RunSoak(o);
  const Counts &c = r.counts;
  std::printf(
      "soak: %zu threads, %lld s, seed %llu: %llu ops (%llu reads, %llu writes; %llu O_DIRECT, "
      "%llu page-aligned, %llu registered buffers of which %llu registered for the one I/O), "
      "%.1f MiB read, %.1f MiB written, %llu reads short at end of file; errors %llu, "
      "mismatched bytes %llu (reads) + %zu (whole file), damaged guards %llu\n",
      o.threads, static_cast<long long>(o.duration.count() * 2 / 1000),
      static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(c.reads + c.writes),
      static_cast<unsigned long long>(c.reads), static_cast<unsigned long long>(c.writes),
      static_cast<unsigned long long>(c.direct), static_cast<unsigned long long>(c.aligned),
      static_cast<unsigned long long>(c.registered),
      static_cast<unsigned long long>(c.registered_once), c.bytes_read / 1048576.0,
      c.bytes_written / 1048576.0, static_cast<unsigned long long>(c.short_reads),
      static_cast<unsigned long long>(c.errors), static_cast<unsigned long long>(c.mismatches),
      r.file_mismatches, static_cast<unsigned long long>(c.guard_damage));
  EXPECT_GT(c.reads, 0u);
  EXPECT_GT(c.writes, 0u);
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_EQ(r.file_mismatches, 0u);
  EXPECT_EQ(c.guard_damage, 0u);
}

// The checks can fail: with the shadow's first MiB wrong, reads covering it
// and the final comparison report it (reads only, so nothing repairs it).
TEST(Soak, ACorruptShadowIsCaught) {
  Options o;
  o.threads = 2;
  o.max_ops = 200;
  o.write_pct = 0;
  const SoakResult r = RunSoak(o, /*corrupt=*/true);
  std::printf("corrupt shadow: %llu reads, mismatched bytes %llu (reads) + %zu (whole file)\n",
              static_cast<unsigned long long>(r.counts.reads),
              static_cast<unsigned long long>(r.counts.mismatches), r.file_mismatches);
  EXPECT_EQ(r.counts.errors, 0u);
  EXPECT_GT(r.counts.mismatches, 0u) << "no read noticed the corrupt shadow";
  EXPECT_EQ(r.file_mismatches, size_t{1} << 20);
}

}  // namespace
}  // namespace ufile::test
