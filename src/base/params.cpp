// SPDX-License-Identifier: Apache-2.0
// Parameters staged with cuFileSetParameter*, read back by the getters. Which
// parameter is which key, field and range is in the key table
// (base/config_keys.h), whose checks the JSON loader shares, so a file and
// the API accept exactly the same values.
// Thread-safety: the staged store is guarded by one mutex; nothing here logs
// or calls another layer while holding it.
#include "base/params.h"

#include <pthread.h>

#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "base/config_keys.h"

namespace ufile {
namespace {

constexpr size_t kMaxPathLen = PATH_MAX - 1;

// Values staged since the last open, on top of LoadConfig().
struct Staged {
  std::map<CUFileSizeTConfigParameter_t, size_t> sizes;
  std::map<CUFileBoolConfigParameter_t, bool> bools;
  std::map<CUFileStringConfigParameter_t, std::string> strings;
  bool has_slabs = false;
  std::vector<size_t> slab_sizes;
  std::vector<size_t> slab_counts;
};

std::mutex g_mu;
Staged g_staged;  // guarded by g_mu

// Taken around fork(), so a child finds the store free and consistent (a
// leaf lock: its holders wait for nothing else, so the order among fork
// handlers does not matter).
const int g_fork_handler =
    pthread_atfork([] { g_mu.lock(); }, [] { g_mu.unlock(); }, [] { g_mu.unlock(); });

Status Invalid() {
  return Status::Op(CU_FILE_INVALID_VALUE);
}

// The Config field of a parameter's row.
template <class T>
T Config::*FieldOf(const ConfigKey &row) {
  return std::get<T Config::*>(row.field);
}

}  // namespace

Status SizeTParamRange(CUFileSizeTConfigParameter_t param, size_t *min_value, size_t *max_value) {
  const ConfigKey *row = FindParamKey(param);
  if (!row || !min_value || !max_value) return Invalid();
  *min_value = row->min;
  *max_value = row->max;
  return Status::Ok();
}

bool CheckSizeTParam(CUFileSizeTConfigParameter_t param, size_t value, std::string *why) {
  const ConfigKey *row = FindParamKey(param);
  if (!row) {
    *why = "unknown parameter " + std::to_string(static_cast<int>(param));
    return false;
  }
  return CheckKeyValue(*row, value, why);
}

bool CheckSlabSizes(const std::vector<size_t> &sizes, std::string *why) {
  return CheckKeyArray(*FindParamKey(CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB), sizes, why);
}

bool CheckSlabCounts(const std::vector<size_t> &counts, std::string *why) {
  return CheckKeyArray(*FindParamKey(CUFILE_PARAM_POSIX_POOL_SLAB_COUNT), counts, why);
}

const char *SizeTParamKey(CUFileSizeTConfigParameter_t param) {
  const ConfigKey *row = FindParamKey(param);
  return row ? row->key : nullptr;
}

const char *BoolParamKey(CUFileBoolConfigParameter_t param) {
  const ConfigKey *row = FindParamKey(param);
  return row ? row->key : nullptr;
}

const char *StringParamKey(CUFileStringConfigParameter_t param) {
  const ConfigKey *row = FindParamKey(param);
  return row ? row->key : nullptr;
}

Status StageSizeTParam(CUFileSizeTConfigParameter_t param, size_t value, std::string *why) {
  if (!CheckSizeTParam(param, value, why)) return Invalid();
  std::lock_guard<std::mutex> lock(g_mu);
  g_staged.sizes[param] = value;
  return Status::Ok();
}

Status StageBoolParam(CUFileBoolConfigParameter_t param, bool value) {
  if (!FindParamKey(param)) return Invalid();
  std::lock_guard<std::mutex> lock(g_mu);
  g_staged.bools[param] = value;
  return Status::Ok();
}

Status StageStringParam(CUFileStringConfigParameter_t param, const char *value, std::string *why) {
  const ConfigKey *row = FindParamKey(param);
  if (!row) {
    *why = "unknown parameter " + std::to_string(static_cast<int>(param));
    return Invalid();
  }
  if (!value) {
    *why = "NULL string";
    return Invalid();
  }
  std::string text = value;
  if (std::holds_alternative<LogLevel Config::*>(row->field)) {
    LogLevel level;
    if (!ParseLogLevel(text, &level)) {
      *why = "not one of NOTICE, ERROR, WARN, INFO, DEBUG, TRACE";
      return Invalid();
    }
    text = LogLevelName(level);
  } else if (text.size() > kMaxPathLen) {
    *why = "longer than PATH_MAX";
    return Invalid();
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_staged.strings[param] = std::move(text);
  return Status::Ok();
}

Status StageSlabParams(const size_t *sizes, const size_t *counts, int len, std::string *why) {
  if (!sizes || !counts) {
    *why = "NULL array";
    return Invalid();
  }
  if (len < 1 || static_cast<size_t>(len) > kMaxSlabs) {
    *why = "len must be in [1, " + std::to_string(kMaxSlabs) + "]";
    return Invalid();
  }
  std::vector<size_t> s(sizes, sizes + len), c(counts, counts + len);
  std::string detail;
  if (!CheckSlabSizes(s, &detail)) {
    *why = "slab sizes: " + detail;
    return Invalid();
  }
  if (!CheckSlabCounts(c, &detail)) {
    *why = "slab counts: " + detail;
    return Invalid();
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_staged.has_slabs = true;
  g_staged.slab_sizes = std::move(s);
  g_staged.slab_counts = std::move(c);
  return Status::Ok();
}

Status ReadSizeTParam(const Config &cfg, CUFileSizeTConfigParameter_t param, size_t *value) {
  const ConfigKey *row = FindParamKey(param);
  if (!row || !value) return Invalid();
  *value = cfg.*FieldOf<size_t>(*row);
  return Status::Ok();
}

Status ReadBoolParam(const Config &cfg, CUFileBoolConfigParameter_t param, bool *value) {
  const ConfigKey *row = FindParamKey(param);
  if (!row || !value) return Invalid();
  *value = cfg.*FieldOf<bool>(*row);
  return Status::Ok();
}

Status ReadStringParam(const Config &cfg, CUFileStringConfigParameter_t param, std::string *value) {
  const ConfigKey *row = FindParamKey(param);
  if (!row || !value) return Invalid();
  if (auto *level = std::get_if<LogLevel Config::*>(&row->field))
    *value = LogLevelName(cfg.*(*level));
  else
    *value = cfg.*FieldOf<std::string>(*row);
  return Status::Ok();
}

void ApplyStagedParams(Config &cfg, bool clear) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto &[param, value] : g_staged.sizes) {
    const ConfigKey &row = *FindParamKey(param);
    cfg.*FieldOf<size_t>(row) = value;
    cfg.sources[row.key] = ConfigSource::kApi;
  }
  for (const auto &[param, value] : g_staged.bools) {
    const ConfigKey &row = *FindParamKey(param);
    cfg.*FieldOf<bool>(row) = value;
    cfg.sources[row.key] = ConfigSource::kApi;
  }
  for (const auto &[param, value] : g_staged.strings) {
    const ConfigKey &row = *FindParamKey(param);
    if (auto *level = std::get_if<LogLevel Config::*>(&row.field))
      ParseLogLevel(value, &(cfg.*(*level)));  // validated when staged
    else
      cfg.*FieldOf<std::string>(row) = value;
    cfg.sources[row.key] = ConfigSource::kApi;
  }
  if (g_staged.has_slabs) {
    cfg.posix_pool_slab_size_kb = g_staged.slab_sizes;
    cfg.posix_pool_slab_count = g_staged.slab_counts;
    for (auto param : {CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB, CUFILE_PARAM_POSIX_POOL_SLAB_COUNT})
      cfg.sources[FindParamKey(param)->key] = ConfigSource::kApi;
  }
  if (clear) g_staged = Staged();
}

Config StagedConfig() {
  Config cfg = LoadConfigOnce();  // outside g_mu: loading logs and reads files
  ApplyStagedParams(cfg, /*clear=*/false);
  return cfg;
}

}  // namespace ufile
