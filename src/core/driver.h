// SPDX-License-Identifier: Apache-2.0
// Driver: the process-wide open/closed state of the library.
//
// While open, a Runtime holds everything that lives between open and close:
// the Config, the handle table, the buffer registry, the engine, the staging
// pool, the GPU contexts. Every API call that needs it takes an OpGuard
// (Driver::Enter), which opens the driver implicitly on first use and keeps
// the Runtime alive for the call. The last cuFileDriverClose marks the driver
// closing (new calls get CU_FILE_DRIVER_CLOSING), waits for the guards to
// drain, then destroys the Runtime explicitly: nothing is released by static
// destructors. A call after close reopens implicitly; handles and buffers of
// the earlier session are gone (CU_FILE_HANDLE_NOT_REGISTERED, ...).
// Thread-safety: all members may be called from any thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/config.h"
#include "core/status.h"

namespace ufile {

class Runtime;

class Driver {
 public:
  // Keeps the Runtime alive and the driver open for one API call.
  class OpGuard {
   public:
    OpGuard() = default;
    OpGuard(OpGuard &&other) noexcept;
    OpGuard &operator=(OpGuard &&other) noexcept;
    ~OpGuard();
    Runtime &runtime() const { return *runtime_; }
    Runtime *operator->() const { return runtime_.get(); }

   private:
    friend class Driver;
    OpGuard(Driver *driver, std::shared_ptr<Runtime> rt) : driver_(driver), runtime_(std::move(rt)) {}
    Driver *driver_ = nullptr;
    std::shared_ptr<Runtime> runtime_;
  };

  static Driver &Get();

  Status Open();   // cuFileDriverOpen: counts one use
  Status Close();  // cuFileDriverClose: drops one use; the last tears down
  long UseCount() const;
  bool IsOpen() const;

  // Opens implicitly if needed; CU_FILE_DRIVER_CLOSING while a close runs.
  Result<OpGuard> Enter();
  // The running Config, or nullptr when closed.
  std::shared_ptr<const Config> RunningConfig() const;

 private:
  Driver() = default;
  Status OpenLocked(std::unique_lock<std::mutex> &lock);
  void Leave();

  mutable std::mutex mu_;
  std::condition_variable drained_;
  std::shared_ptr<Runtime> runtime_;  // guarded by mu_
  long explicit_opens_ = 0;           // guarded by mu_
  long in_flight_ = 0;                // guarded by mu_
  bool closing_ = false;              // guarded by mu_
};

}  // namespace ufile
