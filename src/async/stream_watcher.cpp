// SPDX-License-Identifier: Apache-2.0
#include "async/stream_watcher.h"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "sys/thread_name.h"

namespace ufile {
namespace {
constexpr auto kIdleExit = std::chrono::milliseconds(200);
constexpr auto kMaxDelay = std::chrono::microseconds(100);
// The kernel may stretch a timed sleep by the thread's timer slack (50 us by
// default), which would make every short poll interval 50 us or more.
constexpr unsigned long kTimerSlackNs = 2000;
}  // namespace

StreamWatcher &StreamWatcher::Get() {
  static StreamWatcher *w = new StreamWatcher();  // never destroyed; its thread may outlive main
  return *w;
}

void StreamWatcher::Kick() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!running_) return;
  kicked_ = true;
  cv_.notify_one();
}

void StreamWatcher::Watch(const uint32_t *reach, ReachedFn reached, PassedFn passed, void *arg) {
  std::lock_guard<std::mutex> lock(mu_);
  added_.push_back(Entry{reach, reached, passed, arg, false});
  count_.fetch_add(1);
  if (running_) {
    cv_.notify_one();
    return;
  }
  running_ = true;
  std::thread([this] { Loop(); }).detach();
}

bool StreamWatcher::Poll(std::vector<Entry> &entries, std::atomic<size_t> &count) {
  bool moved = false;
  for (size_t i = 0; i < entries.size();) {
    Entry &e = entries[i];
    const uint32_t v =
        std::atomic_ref<uint32_t>(*const_cast<uint32_t *>(e.reach)).load(std::memory_order_acquire);
    bool done = false;
    if (v >= 1 && !e.seen) {
      e.seen = true;
      moved = true;
      done = !e.reached(e.arg);
    }
    if (!done && e.seen && v == 2) {
      e.passed(e.arg);
      moved = done = true;
    }
    if (done) {
      entries[i] = entries.back();
      entries.pop_back();
      count.fetch_sub(1);
    } else {
      ++i;
    }
  }
  return moved;
}

void StreamWatcher::Loop() {
  NameThisThread("ufile-watcher");
  prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);
  std::vector<Entry> entries;
  std::chrono::microseconds delay{0};
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (entries.empty() && added_.empty() &&
        !cv_.wait_for(lock, kIdleExit, [this] { return !added_.empty(); })) {
      running_ = false;  // idle: a later Watch() starts a new thread
      return;
    }
    entries.insert(entries.end(), added_.begin(), added_.end());
    added_.clear();
    const bool kicked = kicked_;
    kicked_ = false;
    lock.unlock();
    const bool moved = Poll(entries, count_);
    lock.lock();
    if (moved || kicked || entries.empty()) {
      delay = std::chrono::microseconds(0);
      continue;
    }
    // Nothing moved: back off (new operations and kicks wake us at once).
    delay = std::min<std::chrono::microseconds>(
        kMaxDelay, std::max<std::chrono::microseconds>(std::chrono::microseconds(1), delay * 2));
    cv_.wait_for(lock, delay, [this] { return !added_.empty() || kicked_; });
  }
}

}  // namespace ufile
