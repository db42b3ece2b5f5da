// SPDX-License-Identifier: Apache-2.0
#include "async/stream_executor.h"

#include <chrono>
#include <thread>

#include "engine/worker_pool.h"
#include "sys/thread_name.h"

namespace ufile {
namespace {
constexpr auto kIdleExit = std::chrono::seconds(1);
}  // namespace

StreamExecutor &StreamExecutor::Get() {
  static StreamExecutor *e = new StreamExecutor();  // never destroyed; its threads may outlive main
  return *e;
}

void StreamExecutor::Run(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(fn));
  // Every queued task has a thread of its own: idle ones first.
  if (busy_ + queue_.size() > threads_) {
    ++threads_;
    std::thread([this] { Loop(); }).detach();
  } else {
    cv_.notify_one();
  }
}

size_t StreamExecutor::threads() {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

void StreamExecutor::Loop() {
  WorkerPool::MarkIoThread();
  NameThisThread("ufile-stream");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!cv_.wait_for(lock, kIdleExit, [this] { return !queue_.empty(); })) {
      --threads_;
      return;
    }
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
    --busy_;
  }
}

}  // namespace ufile
