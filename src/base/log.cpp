// SPDX-License-Identifier: Apache-2.0
// The cufile log.
//
// The level is one atomic, so LogEnabled costs one load. The destination and
// its descriptor sit behind a mutex; each line is one write(2) on an O_APPEND
// descriptor, so lines of concurrent threads (and processes) never interleave.
//
// Until ConfigureLog is called, the first LogEnabled call configures the log
// itself from LoadConfigOnce(). Config loading logs too: while it runs, that
// thread's messages are held (ConfigLoadScope), then written once the level
// is known, so the ERROR line about a malformed /etc/cufile.json reaches the
// log it configures, once.
#include "base/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace ufile {
namespace {

constexpr int kUnset = -1;
constexpr const char *kStderrPath = "/dev/stderr";

struct HeldLine {
  LogLevel level;
  std::string text;
};

// One call site's budget of ERROR/WARN lines in the current second.
struct SiteBudget {
  const char *file = nullptr;
  int line = 0;
  int64_t second = 0;
  unsigned written = 0;
  uint64_t dropped = 0;
};
constexpr size_t kSites = 64;  // sites sharing a slot share its budget

struct LogState {
  std::atomic<int> level{kUnset};  // a LogLevel, or kUnset before configuration
  std::mutex boot_mu;              // serializes the lazy self-configuration
  std::mutex mu;                   // guards everything below
  std::string destination;         // the path to open on the first enabled message
  int fd = -1;                     // open descriptor of destination, or -1
  bool to_stderr = false;          // destination could not be opened
  std::string in_use;              // LogFilePath()
  std::vector<HeldLine> held;      // lines logged while self-configuring
  SiteBudget sites[kSites];        // rate limit of ERROR/WARN lines
};

// The state the fork handler resets; set before it is registered.
std::atomic<LogState *> g_fork_state{nullptr};
std::atomic<bool> g_line_budget{true};

// A child of fork() has only the forking thread: a lock another thread held
// (writing a line) would never be released there, so the child starts with
// fresh ones. Nothing is taken around the fork itself: the stats code logs
// under its own lock, which its fork handler takes first, and taking the
// log's there in another order could deadlock the parent.
void FreshLocksInChild() {
  LogState *s = g_fork_state.load(std::memory_order_acquire);
  new (&s->boot_mu) std::mutex();
  new (&s->mu) std::mutex();
}

// Never destroyed: static destructors of other objects may still log.
LogState &State() {
  static LogState *state = [] {
    LogState *s = new LogState;
    g_fork_state.store(s, std::memory_order_release);
    pthread_atfork(nullptr, nullptr, FreshLocksInChild);
    return s;
  }();
  return *state;
}

thread_local bool t_self_configuring = false;

std::string DestinationFor(const Config &cfg) {
  if (!cfg.log_file_path.empty()) return cfg.log_file_path;
  if (!cfg.log_dir.empty()) return cfg.log_dir + "/cufile_" + std::to_string(::getpid()) + ".log";
  return "cufile.log";  // in the working directory, as libcufile does
}

void WriteAll(int fd, const std::string &text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report it
    done += static_cast<size_t>(n);
  }
}

void CloseLocked(LogState &s) {
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
  s.to_stderr = false;
  s.in_use.clear();
}

// O_NONBLOCK for the open only: a FIFO with no reader fails it (ENXIO)
// instead of holding the first line, and the log's lock, until one comes.
void OpenLocked(LogState &s) {
  s.fd = ::open(s.destination.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK,
                0644);
  if (s.fd >= 0) {
    const int flags = ::fcntl(s.fd, F_GETFL);
    if (flags >= 0) ::fcntl(s.fd, F_SETFL, flags & ~O_NONBLOCK);
    s.in_use = s.destination;
    return;
  }
  int err = errno;
  s.to_stderr = true;
  s.in_use = kStderrPath;
  WriteAll(STDERR_FILENO, "ufile: cannot open log file " + s.destination + ": " +
                              std::strerror(err) + (err == ENXIO ? " (a FIFO with no reader)" : "") +
                              "; logging to stderr\n");
}

void WriteLocked(LogState &s, const std::string &text) {
  if (s.fd < 0 && !s.to_stderr) OpenLocked(s);
  WriteAll(s.to_stderr ? STDERR_FILENO : s.fd, text);
}

void ApplyLocked(LogState &s, const Config &cfg) {
  std::string dest = DestinationFor(cfg);
  if (dest != s.destination) {
    CloseLocked(s);  // the next enabled message opens the new one
    s.destination = std::move(dest);
  }
  s.level.store(static_cast<int>(cfg.log_level), std::memory_order_release);
}

void FlushHeldLocked(LogState &s) {
  int level = s.level.load(std::memory_order_relaxed);
  for (const HeldLine &line : s.held)
    if (static_cast<int>(line.level) <= level) WriteLocked(s, line.text);
  s.held.clear();
}

// False when the line at file:line is over its budget; *dropped: lines of
// the site dropped before this one (reported once).
bool WithinBudgetLocked(LogState &s, const char *file, int line, uint64_t *dropped) {
  const size_t slot = (reinterpret_cast<uintptr_t>(file) ^ (static_cast<size_t>(line) * 40503u)) %
                      kSites;
  SiteBudget &b = s.sites[slot];
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  if (b.file != file || b.line != line) b = SiteBudget{file, line, now.tv_sec, 0, 0};
  if (b.second != now.tv_sec) {
    b.second = now.tv_sec;
    b.written = 0;
  }
  if (b.written >= kLogLinesPerSecond) {
    ++b.dropped;
    return false;
  }
  ++b.written;
  *dropped = b.dropped;
  b.dropped = 0;
  return true;
}

void SelfConfigure() {
  LogState &s = State();
  std::lock_guard<std::mutex> boot(s.boot_mu);
  if (s.level.load(std::memory_order_acquire) != kUnset) return;  // another thread did it
  Config cfg;
  try {
    cfg = LoadConfigOnce();  // shared with the getters and the open: parsed once
  } catch (...) {
    cfg = Config();  // out of memory: defaults still give a working log
  }
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.level.load(std::memory_order_relaxed) == kUnset) ApplyLocked(s, cfg);
  FlushHeldLocked(s);
}

int CurrentLevel() {
  int level = State().level.load(std::memory_order_acquire);
  if (level != kUnset) return level;
  if (t_self_configuring) return static_cast<int>(LogLevel::kTrace);  // held, filtered later
  try {
    SelfConfigure();
  } catch (...) {
    return static_cast<int>(LogLevel::kError);  // a mutex failed: keep the default level
  }
  return State().level.load(std::memory_order_acquire);
}

// "2026-11-22T10:11:12.123456Z pid=12 tid=13 ERROR config.cpp:88: text\n"
std::string FormatLine(LogLevel level, const char *file, int line, const char *fmt, va_list ap) {
  // The calendar date by arithmetic, not gmtime_r: glibc's takes a lock that
  // no fork handler resets, and a child forked while another thread held it
  // hung in its first log line.
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  const std::chrono::sys_seconds secs{std::chrono::seconds{ts.tv_sec}};
  const std::chrono::sys_days day = std::chrono::floor<std::chrono::days>(secs);
  const std::chrono::year_month_day ymd{day};
  const long sod = static_cast<long>((secs - day).count());
  char stamp[96];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02u-%02uT%02ld:%02ld:%02ld.%06ldZ",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), sod / 3600, sod / 60 % 60, sod % 60,
                ts.tv_nsec / 1000);

  const char *base = file ? std::strrchr(file, '/') : nullptr;
  base = base ? base + 1 : (file ? file : "?");
  char head[160];
  std::snprintf(head, sizeof(head), "%s pid=%d tid=%ld %s %s:%d: ", stamp,
                static_cast<int>(::getpid()), static_cast<long>(::syscall(SYS_gettid)),
                LogLevelName(level), base, line);

  va_list copy;
  va_copy(copy, ap);
  int len = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string msg(len > 0 ? static_cast<size_t>(len) : 0, '\0');
  if (len > 0) std::vsnprintf(msg.data(), msg.size() + 1, fmt, ap);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
  for (char &c : msg)
    if (c == '\n' || c == '\r') c = ' ';  // one line per event
  return head + msg + "\n";
}

}  // namespace

void ConfigureLog(const Config &cfg) {
  LogState &s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  ApplyLocked(s, cfg);
}

void SetLogLineBudget(bool on) {
  g_line_budget.store(on, std::memory_order_relaxed);
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <= CurrentLevel();
}

void LogMessage(LogLevel level, const char *file, int line, const char *fmt, ...) {
  try {
    if (!fmt || static_cast<int>(level) > CurrentLevel()) return;
    std::string text;
    va_list ap;
    va_start(ap, fmt);
    try {
      text = FormatLine(level, file, line, fmt, ap);
    } catch (...) {
      va_end(ap);
      return;
    }
    va_end(ap);
    LogState &s = State();
    std::lock_guard<std::mutex> lock(s.mu);
    if (t_self_configuring && s.level.load(std::memory_order_relaxed) == kUnset) {
      s.held.push_back({level, std::move(text)});
      return;
    }
    if (static_cast<int>(level) > s.level.load(std::memory_order_relaxed)) return;
    uint64_t dropped = 0;
    if (level <= LogLevel::kWarn && level != LogLevel::kNotice &&
        g_line_budget.load(std::memory_order_relaxed) &&
        !WithinBudgetLocked(s, file, line, &dropped))
      return;
    if (dropped)
      text.insert(text.size() - 1, " [" + std::to_string(dropped) +
                                       " earlier lines from here dropped: over " +
                                       std::to_string(kLogLinesPerSecond) + " a second]");
    WriteLocked(s, text);
  } catch (...) {
    // Logging never throws into its caller (often a C entry point).
  }
}

ConfigLoadScope::ConfigLoadScope() : outer_(t_self_configuring) { t_self_configuring = true; }

ConfigLoadScope::~ConfigLoadScope() { t_self_configuring = outer_; }

void ConfigLoadScope::Loaded(const Config &cfg) {
  if (outer_) return;  // the outermost load configures
  LogState &s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.level.load(std::memory_order_relaxed) == kUnset) ApplyLocked(s, cfg);
  t_self_configuring = false;
  FlushHeldLocked(s);
}

std::string LogFilePath() {
  LogState &s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.in_use;
}

}  // namespace ufile
