// SPDX-License-Identifier: Apache-2.0
#include "sys/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace ufile {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "the futex word is the atomic's storage");

uint32_t *Word(const std::atomic<uint32_t> &word) {
  return reinterpret_cast<uint32_t *>(const_cast<std::atomic<uint32_t> *>(&word));
}

}  // namespace

void FutexWait(const std::atomic<uint32_t> &word, uint32_t expected, long timeout_ns) {
  timespec ts{timeout_ns / 1000000000L, timeout_ns % 1000000000L};
  syscall(SYS_futex, Word(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void FutexWakeAll(const std::atomic<uint32_t> &word) {
  syscall(SYS_futex, Word(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace ufile
