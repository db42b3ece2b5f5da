// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the fuzzers: a failed check aborts (so libFuzzer
// saves the input), and scratch files live under $UFILE_FUZZ_TMPDIR (else
// $TMPDIR, else /tmp), never in the source tree.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace ufile::fuzz {

[[noreturn]] inline void Fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "\n*** fuzz check failed: %s: %s\n", what, detail.c_str());
  std::abort();
}

// UFILE_FUZZ_TRACE=1: each decoded call and its result on stderr (to see
// what an input, a seed or a crash reproducer does).
inline bool TraceOn() {
  static const bool on = [] {
    const char *v = std::getenv("UFILE_FUZZ_TRACE");
    return v && *v && *v != '0';
  }();
  return on;
}

#define UFILE_FUZZ_TRACE(...)                                \
  do {                                                       \
    if (::ufile::fuzz::TraceOn()) std::fprintf(stderr, __VA_ARGS__); \
  } while (0)

// A directory of this process's own: <root>/ufile-fuzz-<pid>.
inline std::string ScratchDir() {
  const char *root = std::getenv("UFILE_FUZZ_TMPDIR");
  if (!root || !*root) root = std::getenv("TMPDIR");
  if (!root || !*root) root = "/tmp";
  std::string dir = std::string(root) + "/ufile-fuzz-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) Fail("cannot create", dir);
  return dir;
}

// The text appended to a log file since the last call. The file is emptied
// only now and then: truncating on every input costs ext4 a writeback.
class LogTail {
 public:
  explicit LogTail(std::string path) : path_(std::move(path)) {}
  const std::string &path() const { return path_; }
  void Skip() { Take(); }
  std::string Take() {
    std::string text;
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return text;
    char buf[8192];
    for (ssize_t n; (n = ::pread(fd, buf, sizeof(buf), off_t(seen_ + text.size()))) > 0;)
      text.append(buf, size_t(n));
    ::close(fd);
    seen_ += text.size();
    if (seen_ > (1u << 20) && ::truncate(path_.c_str(), 0) == 0) seen_ = 0;
    return text;
  }

 private:
  std::string path_;
  size_t seen_ = 0;
};

}  // namespace ufile::fuzz
