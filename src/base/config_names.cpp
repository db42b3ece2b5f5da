// SPDX-License-Identifier: Apache-2.0
// The names of log levels, config sources, engines and booleans, as
// configuration files, the environment and ufile-check spell them.
#include <cctype>
#include <string>

#include "base/config.h"

namespace ufile {
namespace {

std::string Lower(std::string text) {
  for (char &c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

const char *LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kNotice:
      return "NOTICE";
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kTrace:
      return "TRACE";
  }
  return "UNKNOWN";
}

bool ParseLogLevel(const std::string &text, LogLevel *level) {
  std::string lower = Lower(text);
  if (lower == "warning") lower = "warn";
  for (int i = 0; i <= static_cast<int>(LogLevel::kTrace); ++i) {
    LogLevel candidate = static_cast<LogLevel>(i);
    if (lower == Lower(LogLevelName(candidate))) {
      *level = candidate;
      return true;
    }
  }
  return false;
}

const char *ConfigSourceName(ConfigSource source) {
  switch (source) {
    case ConfigSource::kDefault:
      return "default";
    case ConfigSource::kSystemJson:
      return "system_json";
    case ConfigSource::kEnvJson:
      return "env_json";
    case ConfigSource::kEnvironment:
      return "environment";
    case ConfigSource::kApi:
      return "api";
  }
  return "unknown";
}

const char *EngineKindName(EngineKind engine) {
  switch (engine) {
    case EngineKind::kAuto:
      return "auto";
    case EngineKind::kIoUring:
      return "io_uring";
    case EngineKind::kThreadPool:
      return "thread_pool";
  }
  return "auto";
}

bool ParseEngineKind(const std::string &raw, EngineKind *engine) {
  const std::string text = Lower(raw);  // any case, as booleans and log levels
  for (EngineKind e : {EngineKind::kAuto, EngineKind::kIoUring, EngineKind::kThreadPool})
    if (text == EngineKindName(e)) {
      *engine = e;
      return true;
    }
  return false;
}

bool ParseBool(const std::string &raw, bool *value) {
  const std::string text = Lower(raw);
  if (text == "true" || text == "1" || text == "yes" || text == "on")
    *value = true;
  else if (text == "false" || text == "0" || text == "no" || text == "off")
    *value = false;
  else
    return false;
  return true;
}

}  // namespace ufile
