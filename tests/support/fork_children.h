// SPDX-License-Identifier: Apache-2.0
// Forks while a thread keeps taking one of the library's locks: a child that
// inherits the lock held hangs. Each child has a deadline; one that misses
// it is killed and counted, and the forking stops there.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace ufile::test {

// Runs busy() without pause on a thread while forking up to `forks` times;
// each child runs child(i) and exits 0 when it returns true (a failed child
// is a test failure). Returns how many children missed a 5 s deadline.
template <class Busy, class Child>
int HungForkChildren(Busy busy, Child child, int forks = 100) {
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    while (!stop.load(std::memory_order_relaxed)) busy();
  });
  int hung = 0;
  for (int i = 0; i < forks && hung == 0; ++i) {
    const pid_t pid = fork();
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      break;
    }
    if (pid == 0) _exit(child(i) ? 0 : 1);
    int status = 0;
    pid_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (got == 0) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << i;
    }
  }
  stop = true;
  worker.join();
  return hung;
}

}  // namespace ufile::test
