// SPDX-License-Identifier: Apache-2.0
// A fake GPU for the stream-ordered I/O protocol (async/stream_backend.h):
// each FakeStream is a host thread that runs its commands in order, a wait
// being a command that is polled until its condition holds. Installed for a
// scope, it lets the CPU tests (and TSan) drive cuFileReadAsync/WriteAsync on
// "streams" without CUDA.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "async/stream_backend.h"

namespace ufile::test {

class FakeStream {
 public:
  FakeStream() : thread_([this] { Loop(); }) {}
  ~FakeStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CUstream handle() { return reinterpret_cast<CUstream>(this); }
  // cmd returns true when done; false means "not yet" (polled again).
  void Push(std::function<bool()> cmd) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(cmd));
    cv_.notify_all();
  }
  // A wait on *flag != 0 that the test opens.
  void Gate(const std::atomic<bool> *open) {
    Push([open] { return open->load(); });
  }
  void Sync() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }
  bool Idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.empty() && !busy_;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::function<bool()> cmd = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      while (!cmd()) std::this_thread::sleep_for(std::chrono::microseconds(20));
      lock.lock();
      busy_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<bool()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

class FakeGpu : public StreamBackend {
 public:
  FakeGpu() : prev_(StreamBackend::Install(this)) {}
  ~FakeGpu() override { StreamBackend::Install(prev_); }
  void Add(FakeStream &s) { known_.insert(s.handle()); }

  bool Usable(std::string *) override { return true; }
  CUresult Context(CUstream s, CUcontext *ctx) override {
    *ctx = nullptr;  // ScopedContext(nullptr) does nothing
    return known_.count(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  }
  bool Capturing(CUstream s) override { return s == capturing; }
  CUresult WriteValue(CUstream s, uint32_t *addr, uint32_t v) override {
    if (fail_write_at.load() == ++writes_) return CUDA_ERROR_NOT_SUPPORTED;
    Of(s).Push([addr, v] {
      std::atomic_ref<uint32_t>(*addr).store(v, std::memory_order_release);
      return true;
    });
    return CUDA_SUCCESS;
  }
  CUresult WaitValue(CUstream s, uint32_t *addr, uint32_t v) override {
    if (fail_wait_at.load() == ++waits_) return CUDA_ERROR_NOT_SUPPORTED;
    Of(s).Push([addr, v] {
      return std::atomic_ref<uint32_t>(*addr).load(std::memory_order_acquire) == v;
    });
    return CUDA_SUCCESS;
  }
  CUresult Synchronize(CUstream s) override {
    ++syncs;
    if (on_sync) on_sync();
    if (s) Of(s).Sync();
    return CUDA_SUCCESS;
  }
  bool NeedsPinnedFlags() const override { return false; }

  std::atomic<int> fail_write_at{0};  // the nth WriteValue fails (1-based; 0: none)
  std::atomic<int> fail_wait_at{0};
  std::atomic<int> syncs{0};
  std::function<void()> on_sync;  // run as Synchronize starts
  CUstream capturing = nullptr;

 private:
  static FakeStream &Of(CUstream s) { return *reinterpret_cast<FakeStream *>(s); }
  StreamBackend *prev_;
  std::set<CUstream> known_;
  std::atomic<int> writes_{0};
  std::atomic<int> waits_{0};
};

}  // namespace ufile::test
