// SPDX-License-Identifier: Apache-2.0
#include "core/driver.h"

#include "core/log.h"
#include "core/params.h"
#include "core/runtime.h"

namespace ufile {

Driver &Driver::Get() {
  static Driver *driver = new Driver();  // never destroyed: see core/driver.h
  return *driver;
}

Driver::OpGuard::OpGuard(OpGuard &&other) noexcept
    : driver_(other.driver_), runtime_(std::move(other.runtime_)) {
  other.driver_ = nullptr;
}

Driver::OpGuard &Driver::OpGuard::operator=(OpGuard &&other) noexcept {
  if (this != &other) {
    if (driver_) driver_->Leave();
    driver_ = other.driver_;
    runtime_ = std::move(other.runtime_);
    other.driver_ = nullptr;
  }
  return *this;
}

Driver::OpGuard::~OpGuard() {
  runtime_.reset();
  if (driver_) driver_->Leave();
}

Status Driver::OpenLocked(std::unique_lock<std::mutex> &lock) {
  (void)lock;
  if (runtime_) return Status::Ok();
  Config cfg = LoadConfig();
  ApplyStagedParams(cfg, /*clear=*/true);
  ConfigureLog(cfg);
  runtime_ = std::make_shared<Runtime>(std::make_shared<const Config>(std::move(cfg)));
  return Status::Ok();
}

Status Driver::Open() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_) return Status::Op(CU_FILE_DRIVER_CLOSING);
  UFILE_RETURN_IF_ERROR(OpenLocked(lock));
  ++explicit_opens_;
  return Status::Ok();
}

Status Driver::Close() {
  std::shared_ptr<Runtime> doomed;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (closing_) return Status::Op(CU_FILE_DRIVER_CLOSING);
    if (!runtime_) {
      UFILE_LOG_ERROR("cuFileDriverClose: the driver is not open");
      return Status::Op(CU_FILE_DRIVER_NOT_INITIALIZED);
    }
    if (explicit_opens_ > 1) {
      --explicit_opens_;
      return Status::Ok();
    }
    closing_ = true;
    if (in_flight_ > 0)
      UFILE_LOG_INFO("cuFileDriverClose: waiting for %ld operations in flight", in_flight_);
    drained_.wait(lock, [this] { return in_flight_ == 0; });
    doomed = std::move(runtime_);
    explicit_opens_ = 0;
  }
  doomed.reset();  // tears down outside the lock: joins I/O threads
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = false;
  return Status::Ok();
}

long Driver::UseCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  // An implicit open (first use) counts as one use until the close.
  return runtime_ ? std::max(explicit_opens_, 1L) : 0;
}

bool Driver::IsOpen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runtime_ != nullptr;
}

Result<Driver::OpGuard> Driver::Enter() {
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_) return Status::Op(CU_FILE_DRIVER_CLOSING);
  UFILE_RETURN_IF_ERROR(OpenLocked(lock));
  ++in_flight_;
  return OpGuard(this, runtime_);
}

void Driver::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--in_flight_ == 0) drained_.notify_all();
}

std::shared_ptr<const Config> Driver::RunningConfig() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runtime_ ? runtime_->shared_config() : nullptr;
}

}  // namespace ufile
