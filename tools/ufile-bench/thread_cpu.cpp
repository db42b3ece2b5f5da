// SPDX-License-Identifier: Apache-2.0
#include "thread_cpu.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace bench {
namespace {

// io_uring and kernel helper threads carry the process id or a number
// ("iou-wrk-4242"): one group a name.
std::string GroupName(std::string name) {
  while (!name.empty() && (std::isdigit(static_cast<unsigned char>(name.back())) ||
                           name.back() == '-' || name.back() == '_'))
    name.pop_back();
  return name.empty() ? "?" : name;
}

}  // namespace

ThreadTimes SnapshotThreads() {
  ThreadTimes t;
  DIR *d = opendir("/proc/self/task");
  if (!d) return t;
  while (dirent *e = readdir(d)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
    if (tid <= 0) continue;
    const std::string dir = std::string("/proc/self/task/") + e->d_name;
    ThreadTimes::Thread th;
    std::ifstream stat(dir + "/schedstat");
    if (!(stat >> th.cpu_ns)) continue;  // exited meanwhile
    std::ifstream comm(dir + "/comm");
    std::getline(comm, th.name);
    t.by_tid[tid] = std::move(th);
  }
  closedir(d);
  return t;
}

std::string DescribeThreadCpu(const ThreadTimes &a, const ThreadTimes &b, double total_s) {
  struct Group {
    double s = 0;
    int threads = 0;
  };
  std::map<std::string, Group> groups;
  double living = 0;
  for (const auto &[tid, th] : b.by_tid) {
    auto was = a.by_tid.find(tid);
    const uint64_t before = was != a.by_tid.end() ? was->second.cpu_ns : 0;
    const double s = static_cast<double>(th.cpu_ns - std::min(before, th.cpu_ns)) * 1e-9;
    if (s <= 0) continue;
    Group &g = groups[GroupName(th.name)];
    g.s += s;
    ++g.threads;
    living += s;
  }
  std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto &x, const auto &y) { return x.second.s > y.second.s; });
  std::string out;
  char piece[96];
  for (const auto &[name, g] : sorted) {
    std::snprintf(piece, sizeof piece, "%s%s %.3f s (%d)", out.empty() ? "" : ", ", name.c_str(),
                  g.s, g.threads);
    out += piece;
  }
  std::snprintf(piece, sizeof piece, "%sexited %.3f s", out.empty() ? "" : ", ",
                std::max(0.0, total_s - living));
  return out + piece;
}

}  // namespace bench
