// SPDX-License-Identifier: Apache-2.0
// The cufile log: one line per event with time, pid, tid, level and source.
// Level and destination come from the Config (logging.level / logging.dir,
// CUFILE_LOGGING_LEVEL / CUFILE_LOGFILE_PATH); before the driver opens they
// come from the environment and the JSON files. The file is created on the
// first message at an enabled level, never before.
// Thread-safety: all functions may be called from any thread.
#pragma once

#include "base/config.h"

namespace ufile {

// Applies cfg's level and destination; later messages follow it.
void ConfigureLog(const Config &cfg);
bool LogEnabled(LogLevel level);
void LogMessage(LogLevel level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
// Path of the log file in use ("" when nothing has been logged yet).
std::string LogFilePath();

// Set by LoadConfig while it reads the configuration: this thread's lines are
// held until the log knows its level; Loaded(cfg) gives the log cfg's level
// and destination if nothing configured it yet, and writes the held lines.
// So loading logs each problem once, and never loads again to log it.
class ConfigLoadScope {
 public:
  ConfigLoadScope();
  ~ConfigLoadScope();
  ConfigLoadScope(const ConfigLoadScope &) = delete;
  ConfigLoadScope &operator=(const ConfigLoadScope &) = delete;
  void Loaded(const Config &cfg);

 private:
  bool outer_;  // the thread's previous state, restored at the end
};

// ERROR and WARN lines are limited per call site (file and line) to
// kLogLinesPerSecond a second; the next line written from a site says how
// many of its lines were dropped. A client polling a refused call in a loop
// wrote 23 MB of identical lines in 5 s without it.
inline constexpr unsigned kLogLinesPerSecond = 100;

// Turns that limit off (false) or on again; on by default. For checks that
// every refusal is logged (the fuzzers), which make thousands a second.
void SetLogLineBudget(bool on);

}  // namespace ufile

#define UFILE_LOG(level, ...)                                                \
  do {                                                                       \
    if (::ufile::LogEnabled(level))                                          \
      ::ufile::LogMessage(level, __FILE__, __LINE__, __VA_ARGS__);           \
  } while (0)
#define UFILE_LOG_ERROR(...) UFILE_LOG(::ufile::LogLevel::kError, __VA_ARGS__)
#define UFILE_LOG_WARN(...) UFILE_LOG(::ufile::LogLevel::kWarn, __VA_ARGS__)
#define UFILE_LOG_INFO(...) UFILE_LOG(::ufile::LogLevel::kInfo, __VA_ARGS__)
#define UFILE_LOG_DEBUG(...) UFILE_LOG(::ufile::LogLevel::kDebug, __VA_ARGS__)
#define UFILE_LOG_TRACE(...) UFILE_LOG(::ufile::LogLevel::kTrace, __VA_ARGS__)
