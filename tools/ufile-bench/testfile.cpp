// SPDX-License-Identifier: Apache-2.0
#include "testfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "memory.h"
#include "options.h"
#include "pattern.h"

namespace bench {
namespace {

enum class State { kNone, kPattern, kDirty };

std::string SidecarPath(const std::string &path) {
  return path + ".ufile-bench";
}

State ReadState(const std::string &path, uint64_t *pattern_size) {
  std::ifstream in(SidecarPath(path));
  std::string word;
  if (!(in >> word)) return State::kNone;
  if (word == "pattern" && (in >> *pattern_size)) return State::kPattern;
  return State::kDirty;
}

void WriteState(const std::string &path, const std::string &text) {
  std::ofstream out(SidecarPath(path), std::ios::trunc);
  out << text << "\n";
}

// Writes the pattern over [0, size) with nthreads threads, 16 MiB a piece.
Status Fill(int fd, uint64_t size, int nthreads) {
  constexpr uint64_t kPiece = 16ull << 20;
  const uint64_t pieces = (size + kPiece - 1) / kPiece;
  std::atomic<uint64_t> next{0};
  std::atomic<int> err{0};
  auto work = [&] {
    std::vector<unsigned char> buf(kPiece);
    for (uint64_t p = next++; p < pieces && !err; p = next++) {
      const uint64_t off = p * kPiece;
      const size_t n = static_cast<size_t>(std::min(kPiece, size - off));
      FillPattern(off, buf.data(), n);
      if (pwrite(fd, buf.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n))
        err = errno ? errno : EIO;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, nthreads); ++t) pool.emplace_back(work);
  for (auto &th : pool) th.join();
  if (err) return ErrnoFail("writing the pattern", err);
  if (fsync(fd) != 0) return ErrnoFail("fsync", errno);
  return {};
}

Status Create(const std::string &path, uint64_t size, int nthreads, bool quiet) {
  if (!quiet)
    std::fprintf(stderr, "ufile-bench: filling %s (%s) with the test pattern\n", path.c_str(),
                 SizeText(size).c_str());
  int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0644);
  if (fd < 0) return ErrnoFail(path.c_str(), errno);
  Status st;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) st = ErrnoFail("ftruncate", errno);
  if (st.ok()) st = Fill(fd, size, std::clamp(nthreads, 4, 16));
  close(fd);
  if (st.ok()) WriteState(path, "pattern " + std::to_string(size));
  return st;
}

}  // namespace

Status PrepareFile(const std::string &path, uint64_t *size, bool need_pattern, int nthreads,
                   bool quiet) {
  struct stat sb {};
  const bool exists = stat(path.c_str(), &sb) == 0;
  if (!exists && errno != ENOENT) return ErrnoFail(path.c_str(), errno);
  if (exists && !S_ISREG(sb.st_mode)) return Fail("%s is not a regular file", path.c_str());
  uint64_t pattern_size = 0;
  const State state = exists ? ReadState(path, &pattern_size) : State::kNone;
  const auto have = exists ? static_cast<uint64_t>(sb.st_size) : 0;
  if (*size == 0) *size = exists ? have : (1ull << 30);
  if (exists && state == State::kNone) {  // the user's file: never overwritten here
    if (need_pattern)
      return Fail(
          "%s has no sidecar %s: it was not written by ufile-bench and cannot be "
          "verified (use a new path)",
          path.c_str(), SidecarPath(path).c_str());
    if (have < *size)
      return Fail("%s holds %s, less than -s %s", path.c_str(), SizeText(have).c_str(),
                  SizeText(*size).c_str());
    return {};
  }
  if (*size == 0) return Fail("%s is empty", path.c_str());
  const bool intact = state == State::kPattern && pattern_size >= *size && have >= *size;
  const bool usable = state == State::kDirty && !need_pattern && have >= *size;
  if (intact || usable) return {};
  return Create(path, *size, nthreads, quiet);
}

void MarkDirty(const std::string &path) {
  WriteState(path, "dirty");
}

Status DropCache(const std::string &path, std::string *how) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return ErrnoFail(path.c_str(), errno);
  // Dirty pages survive DONTNEED: write them back first.
  int rc = fsync(fd);
  if (rc == 0)
    rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  else
    rc = errno;
  close(fd);
  if (rc != 0) return ErrnoFail("fsync/posix_fadvise(DONTNEED)", rc);
  *how = "fadvise";
  int dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (dc >= 0) {
    if (write(dc, "1\n", 2) == 2) *how = "fadvise+drop_caches";
    close(dc);
  }
  return {};
}

bool DirectIoWorks(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) return false;
  close(fd);
  return true;
}

}  // namespace bench
