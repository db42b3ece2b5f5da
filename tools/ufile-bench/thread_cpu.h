// SPDX-License-Identifier: Apache-2.0
// --thread-cpu: where a run's CPU time went, by thread name. A snapshot
// reads every thread's time on CPU (/proc/self/task/*/schedstat, ns) and
// name (comm); the difference of two snapshots, grouped by name, tells the
// library's threads (ufile-pool, iou-wrk, cuda-*) from the row's own,
// which exit before the second snapshot and show as "exited". Each group
// also shows its share in the kernel (stat's stime over utime + stime, in
// clock ticks: coarse) and how often its threads went to sleep.
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
    uint64_t user_ticks = 0, sys_ticks = 0;
    uint64_t sleeps = 0;  // voluntary context switches
  };
  std::map<pid_t, Thread> by_tid;
};

ThreadTimes SnapshotThreads();

// "ufile-pool 0.123 s (15 threads, 70 % sys, 2400 sleeps), ..., exited
// 0.201 s": the CPU seconds each name's threads spent between a and b,
// largest first; what
// the whole process spent (total_s) and no living thread accounts for is
// "exited".
std::string DescribeThreadCpu(const ThreadTimes &a, const ThreadTimes &b, double total_s);

}  // namespace bench
