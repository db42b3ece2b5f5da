// SPDX-License-Identifier: Apache-2.0
// Checks inside a gtest death-test child. gtest's assertions there do not
// reach the parent, so a ChildChecks prints each failed check to stderr
// (which the parent's EXPECT_EXIT shows) and exits 1 if any failed.
// Usage, with the "threadsafe" death-test style (the child re-executes the
// binary, so it starts single-threaded and its rlimits stay its own):
//   EXPECT_EXIT(RunChild(Body), ::testing::ExitedWithCode(0), "");
// where Body(ChildChecks &child) uses CHILD_CHECK / CHILD_EQ. Body's locals
// (temporary directories) are destroyed before the child exits.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ufile::test {

class ChildChecks {
 public:
  void Check(bool ok, const char *expr, int line) {
    if (ok) return;
    const int err = errno;
    ++failures_;
    std::fprintf(stderr, "child, line %d: %s is false (errno %d: %s)\n", line, expr, err,
                 std::strerror(err));
  }
  void Eq(long long a, long long b, const char *ea, const char *eb, int line) {
    if (a == b) return;
    ++failures_;
    std::fprintf(stderr, "child, line %d: %s == %s failed: %lld vs %lld\n", line, ea, eb, a, b);
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

#define CHILD_CHECK(cond) child.Check((cond), #cond, __LINE__)
#define CHILD_EQ(a, b) \
  child.Eq(static_cast<long long>(a), static_cast<long long>(b), #a, #b, __LINE__)

template <class Body>
[[noreturn]] void RunChild(Body body) {
  ChildChecks child;
  body(child);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(child.failures() ? 1 : 0);
}

}  // namespace ufile::test
