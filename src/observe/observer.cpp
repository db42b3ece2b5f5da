// SPDX-License-Identifier: Apache-2.0
#include "observe/observer.h"

#include "observe/state.h"

namespace ufile::observe {

std::atomic<unsigned> g_state{0};

namespace {
std::atomic<const Observer *> g_observer{nullptr};
}  // namespace

void Install(const Observer *observer) {
  g_observer.store(observer, std::memory_order_release);
}

void DriverOpened(const std::shared_ptr<const Config> &cfg) {
  if (const Observer *o = g_observer.load(std::memory_order_acquire)) o->driver_open(cfg);
}

void DriverClosed() {
  if (const Observer *o = g_observer.load(std::memory_order_acquire)) o->driver_close();
}

void IoDone(const IoSample &io) {
  if (const Observer *o = g_observer.load(std::memory_order_acquire)) o->io_done(io);
}

}  // namespace ufile::observe
