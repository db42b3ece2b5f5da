// SPDX-License-Identifier: Apache-2.0
// Names the calling thread (at most 15 characters), so that top -H, gdb,
// perf and ufile-bench --thread-cpu tell ufile's threads from the
// application's. Best effort: a failure changes nothing else.
#pragma once

#include <pthread.h>

namespace ufile {

inline void NameThisThread(const char *name) {
  pthread_setname_np(pthread_self(), name);
}

}  // namespace ufile
