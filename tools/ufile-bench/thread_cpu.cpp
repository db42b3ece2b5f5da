// SPDX-License-Identifier: Apache-2.0
#include "thread_cpu.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
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
    std::ifstream schedstat(dir + "/schedstat");
    if (!(schedstat >> th.cpu_ns)) continue;  // exited meanwhile
    std::ifstream comm(dir + "/comm");
    std::getline(comm, th.name);
    // stat: "pid (comm) state ..." with utime and stime the 12th and 13th
    // fields after the closing parenthesis (comm may hold spaces).
    std::ifstream stat(dir + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close != std::string::npos) {
      std::istringstream rest(line.substr(close + 1));
      std::string field;
      for (int f = 1; f <= 13 && rest >> field; ++f) {
        if (f == 12) th.user_ticks = std::strtoull(field.c_str(), nullptr, 10);
        if (f == 13) th.sys_ticks = std::strtoull(field.c_str(), nullptr, 10);
      }
    }
    std::ifstream status(dir + "/status");
    while (std::getline(status, line))
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
        th.sleeps = std::strtoull(line.c_str() + 24, nullptr, 10);
    t.by_tid[tid] = std::move(th);
  }
  closedir(d);
  return t;
}

std::string DescribeThreadCpu(const ThreadTimes &a, const ThreadTimes &b, double total_s) {
  struct Group {
    double s = 0;
    int threads = 0;
    uint64_t user = 0, sys = 0, sleeps = 0;
  };
  std::map<std::string, Group> groups;
  double living = 0;
  const ThreadTimes::Thread none;  // a thread born after a
  for (const auto &[tid, th] : b.by_tid) {
    auto was = a.by_tid.find(tid);
    const ThreadTimes::Thread &old = was != a.by_tid.end() ? was->second : none;
    const double s = static_cast<double>(th.cpu_ns - std::min(old.cpu_ns, th.cpu_ns)) * 1e-9;
    if (s <= 0) continue;
    Group &g = groups[GroupName(th.name)];
    g.s += s;
    ++g.threads;
    g.user += th.user_ticks - std::min(old.user_ticks, th.user_ticks);
    g.sys += th.sys_ticks - std::min(old.sys_ticks, th.sys_ticks);
    g.sleeps += th.sleeps - std::min(old.sleeps, th.sleeps);
    living += s;
  }
  std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto &x, const auto &y) { return x.second.s > y.second.s; });
  std::string out;
  char piece[160];
  for (const auto &[name, g] : sorted) {
    const uint64_t ticks = g.user + g.sys;
    std::snprintf(piece, sizeof piece, "%s%s %.3f s (%d threads, %s%% sys, %llu sleeps)",
                  out.empty() ? "" : ", ", name.c_str(), g.s, g.threads,
                  ticks ? std::to_string(g.sys * 100 / ticks).c_str() : "-",
                  static_cast<unsigned long long>(g.sleeps));
    out += piece;
  }
  std::snprintf(piece, sizeof piece, "%sexited %.3f s", out.empty() ? "" : ", ",
                std::max(0.0, total_s - living));
  return out + piece;
}

}  // namespace bench
