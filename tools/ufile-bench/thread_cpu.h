// SPDX-License-Identifier: Apache-2.0
// --thread-cpu: where a run's CPU time went, by thread name. A snapshot
// reads every thread's time on CPU (/proc/self/task/*/schedstat, ns) and
// name (comm); the difference of two snapshots, grouped by name, tells the
// library's threads (ufile-pool, iou-wrk, cuda-*) from the row's own,
// which exit before the second snapshot and show as "exited".
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace bench {

struct ThreadTimes {
  struct Thread {
    std::string name;
    uint64_t cpu_ns = 0;
  };
  std::map<pid_t, Thread> by_tid;
};

ThreadTimes SnapshotThreads();

// "ufile-pool 0.123 s (15), iou-wrk 0.004 s (2), exited 0.201 s": the CPU
// seconds each name's threads spent between a and b, largest first; what
// the whole process spent (total_s) and no living thread accounts for is
// "exited".
std::string DescribeThreadCpu(const ThreadTimes &a, const ThreadTimes &b, double total_s);

}  // namespace bench
