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
// After fork(), the child starts with no session: the parent's handles and
// buffers are unknown there and the next call opens a fresh session.
// Thread-safety: all members may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "base/config.h"
#include "base/status.h"

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
    Runtime *operator->() const { return runtime_; }

   private:
    friend class Driver;
    OpGuard(Driver *driver, Runtime *rt) : driver_(driver), runtime_(rt) {}
    Driver *driver_ = nullptr;
    Runtime *runtime_ = nullptr;  // alive while any guard is: Close waits for them
  };

  static Driver &Get();

  Status Open();  // cuFileDriverOpen: counts one use
  // cuFileDriverClose: drops one use; the last tears down. inside_call: the
  // caller is itself inside a cuFile call (a callback) or on an I/O thread,
  // so waiting for calls in flight would wait for itself: refused with
  // CU_FILE_INVALID_VALUE instead.
  Status Close(bool inside_call = false);
  long UseCount() const;
  bool IsOpen() const;

  // Opens implicitly if needed; CU_FILE_DRIVER_CLOSING while a close runs.
  // The fast path is two atomic operations, no lock.
  Result<OpGuard> Enter();
  // The same without the implicit open: CU_FILE_DRIVER_NOT_INITIALIZED when
  // closed (for calls that only refuse then, like deregistrations).
  Result<OpGuard> EnterIfOpen();
  // The running Config, or nullptr when closed.
  std::shared_ptr<const Config> RunningConfig() const;

 private:
  Driver() = default;
  Status OpenLocked(std::unique_lock<std::mutex> &lock);
  Result<OpGuard> EnterImpl(bool open_if_closed);
  void Leave();
  void AbandonInChild();

  mutable std::mutex mu_;
  std::condition_variable drained_;
  std::shared_ptr<Runtime> runtime_;   // guarded by mu_; written only with closing_ set
  long uses_ = 0;  // guarded by mu_: opens not yet closed, an implicit one included
  std::atomic<Runtime *> live_{nullptr};  // runtime_.get() while open and not closing
  std::atomic<long> in_flight_{0};        // OpGuards alive
  std::atomic<bool> closing_{false};
};

}  // namespace ufile
