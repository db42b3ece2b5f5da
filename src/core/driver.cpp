// SPDX-License-Identifier: Apache-2.0
#include "core/driver.h"

#include <pthread.h>

#include <new>

#include "base/log.h"
#include "base/params.h"
#include "core/runtime.h"
#include "observe/observer.h"

namespace ufile {

Driver &Driver::Get() {
  static Driver *driver = [] {
    auto *d = new Driver();  // never destroyed: see core/driver.h
    pthread_atfork(nullptr, nullptr, [] { Get().AbandonInChild(); });
    return d;
  }();
  return *driver;
}

// Runs in the child of a fork, single-threaded. The session is the parent's:
// its threads do not exist here and its CUDA contexts are unusable, so it is
// abandoned (leaked), never torn down. A thread that is gone may have held
// mu_, so the members are rebuilt in place without reading them.
void Driver::AbandonInChild() {
  new (&mu_) std::mutex();
  new (&drained_) std::condition_variable();
  new (&runtime_) std::shared_ptr<Runtime>();
  uses_ = 0;
  live_.store(nullptr);
  in_flight_.store(0);
  closing_.store(false);
}

Driver::OpGuard::OpGuard(OpGuard &&other) noexcept
    : driver_(other.driver_), runtime_(other.runtime_) {
  other.driver_ = nullptr;
  other.runtime_ = nullptr;
}

Driver::OpGuard &Driver::OpGuard::operator=(OpGuard &&other) noexcept {
  if (this != &other) {
    if (driver_) driver_->Leave();
    driver_ = other.driver_;
    runtime_ = other.runtime_;
    other.driver_ = nullptr;
    other.runtime_ = nullptr;
  }
  return *this;
}

Driver::OpGuard::~OpGuard() {
  if (driver_) driver_->Leave();
}

Status Driver::OpenLocked(std::unique_lock<std::mutex> &lock) {
  (void)lock;
  if (runtime_) return Status::Ok();
  Config cfg = LoadConfigOnce();  // what the getters before open saw, parsed once
  ForgetLoadedConfig();            // the next open reads the files afresh
  ApplyStagedParams(cfg, /*clear=*/true);
  ConfigureLog(cfg);
  runtime_ = std::make_shared<Runtime>(std::make_shared<const Config>(std::move(cfg)));
  observe::DriverOpened(runtime_->shared_config());
  live_.store(runtime_.get(), std::memory_order_seq_cst);
  return Status::Ok();
}

Status Driver::Open() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_) return Status::Op(CU_FILE_DRIVER_CLOSING);
  UFILE_RETURN_IF_ERROR(OpenLocked(lock));
  ++uses_;
  return Status::Ok();
}

Status Driver::Close(bool inside_call) {
  std::shared_ptr<Runtime> doomed;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (closing_) return Status::Op(CU_FILE_DRIVER_CLOSING);
    if (!runtime_) {
      UFILE_LOG_ERROR("cuFileDriverClose: the driver is not open");
      return Status::Op(CU_FILE_DRIVER_NOT_INITIALIZED);
    }
    if (uses_ > 1) {
      --uses_;
      return Status::Ok();
    }
    if (inside_call) {
      UFILE_LOG_ERROR("cuFileDriverClose: called inside a cuFile call or on a ufile I/O thread; "
                      "it cannot wait for the call it is part of");
      return Status::Op(CU_FILE_INVALID_VALUE);
    }
    // Dekker with Enter(): closing_ is published before in_flight_ is read,
    // and Enter() bumps in_flight_ before reading closing_ (all seq_cst).
    closing_.store(true, std::memory_order_seq_cst);
    live_.store(nullptr, std::memory_order_seq_cst);
    if (in_flight_.load() > 0)
      UFILE_LOG_INFO("cuFileDriverClose: waiting for %ld operations in flight", in_flight_.load());
    drained_.wait(lock, [this] { return in_flight_.load() == 0; });
    doomed = std::move(runtime_);
    uses_ = 0;
  }
  doomed.reset();  // tears down outside the lock: joins I/O threads
  observe::DriverClosed();
  std::lock_guard<std::mutex> lock(mu_);
  closing_.store(false, std::memory_order_seq_cst);
  return Status::Ok();
}

long Driver::UseCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runtime_ ? uses_ : 0;
}

bool Driver::IsOpen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runtime_ != nullptr;
}

Result<Driver::OpGuard> Driver::Enter() { return EnterImpl(/*open_if_closed=*/true); }

Result<Driver::OpGuard> Driver::EnterIfOpen() { return EnterImpl(/*open_if_closed=*/false); }

Result<Driver::OpGuard> Driver::EnterImpl(bool open_if_closed) {
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (!closing_.load(std::memory_order_seq_cst)) {
    if (Runtime *rt = live_.load(std::memory_order_seq_cst)) return OpGuard(this, rt);
  }
  Leave();
  // Slow path: first use (implicit open) or a close in progress.
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_) return Status::Op(CU_FILE_DRIVER_CLOSING);
  if (!open_if_closed && !runtime_) return Status::Op(CU_FILE_DRIVER_NOT_INITIALIZED);
  if (open_if_closed) {
    UFILE_RETURN_IF_ERROR(OpenLocked(lock));
    // An implicit open (first use) counts as one use: another library's
    // cuFileDriverOpen/Close pair in the same process must not close it.
    if (uses_ == 0) uses_ = 1;
  }
  in_flight_.fetch_add(1, std::memory_order_seq_cst);
  return OpGuard(this, runtime_.get());
}

void Driver::Leave() {
  if (in_flight_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      closing_.load(std::memory_order_seq_cst)) {
    std::lock_guard<std::mutex> lock(mu_);  // pairs with the waiter's predicate check
    drained_.notify_all();
  }
}

std::shared_ptr<const Config> Driver::RunningConfig() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runtime_ ? runtime_->shared_config() : nullptr;
}

}  // namespace ufile
