// SPDX-License-Identifier: Apache-2.0
// The stream watcher: one ufile thread that follows stream-ordered
// operations through their user streams by polling words the GPU writes
// (cuStreamWriteValue32): 1 when the stream reaches an operation, 2 when it
// has passed the operation's wait. It calls `reached` once on the first, and
// `passed` once on the second; both must return at once (they post work or
// free memory). No CUDA host function is involved: CUDA runs those on one
// thread for all streams, which would serialize independent streams.
// The thread starts with the first watched operation and ends after a short
// idle period; it polls with a backoff of at most 100 us while operations
// are watched and sleeps otherwise. Kick() restarts the backoff from zero:
// an operation's I/O calls it when it lets its stream go, since the stream
// is then likely to reach (or pass) a watched word within microseconds.
// Thread-safety: Watch() may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ufile {

class StreamWatcher {
 public:
  // Returns whether to keep watching for "passed".
  using ReachedFn = bool (*)(void *arg);
  using PassedFn = void (*)(void *arg);

  static StreamWatcher &Get();
  // Follows the word at reach (0 until the GPU writes it) until it reads 2,
  // or until reached() returns false.
  void Watch(const uint32_t *reach, ReachedFn reached, PassedFn passed, void *arg);
  size_t watched() const { return count_.load(); }
  // Polls again at once, then backs off from the shortest interval.
  void Kick();

 private:
  struct Entry {
    const uint32_t *reach;
    ReachedFn reached;
    PassedFn passed;
    void *arg;
    bool seen;
  };
  StreamWatcher() = default;
  void Loop();
  // One pass over entries; true if any moved.
  static bool Poll(std::vector<Entry> &entries, std::atomic<size_t> &count);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> added_;  // guarded by mu_; not yet taken by the thread
  bool running_ = false;      // guarded by mu_
  bool kicked_ = false;       // guarded by mu_
  std::atomic<size_t> count_{0};
};

}  // namespace ufile
