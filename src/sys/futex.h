// SPDX-License-Identifier: Apache-2.0
// Sleeping on a 32-bit atomic with a time limit (std::atomic::wait has none):
// a thread waits for a counter to move, and the bound keeps a lost wake-up
// from ever costing more than the limit.
// Thread-safety: any thread; the word must outlive every waiter.
#pragma once

#include <atomic>
#include <cstdint>

namespace ufile {

// Sleeps while word == expected, at most timeout_ns (spurious returns are
// allowed: callers re-check their condition).
void FutexWait(const std::atomic<uint32_t> &word, uint32_t expected, long timeout_ns);
// Wakes every thread sleeping on word.
void FutexWakeAll(const std::atomic<uint32_t> &word);

}  // namespace ufile
