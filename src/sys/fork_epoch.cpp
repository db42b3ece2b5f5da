// SPDX-License-Identifier: Apache-2.0
#include "sys/fork_epoch.h"

#include <pthread.h>

#include <atomic>

namespace ufile {
namespace {

std::atomic<unsigned> g_epoch{0};

// Registered at load time, before any thread of ours exists.
const int g_registered = pthread_atfork(nullptr, nullptr, [] {
  g_epoch.fetch_add(1, std::memory_order_relaxed);
});

}  // namespace

unsigned ForkEpoch() {
  (void)g_registered;
  return g_epoch.load(std::memory_order_relaxed);
}

}  // namespace ufile
