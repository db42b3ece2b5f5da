// SPDX-License-Identifier: Apache-2.0
// Parameters staged with cuFileSetParameter*, the ranges they accept, and the
// mapping from each CUFile*ConfigParameter_t to its Config field and JSON key.
// The value checks here are shared with the JSON loader (base/config.cpp), so
// a file and the API accept exactly the same values.
// Thread-safety: the staged store is guarded by one mutex; nothing here logs
// or calls another layer while holding it.
#include "base/params.h"

#include <pthread.h>

#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ufile {
namespace {

constexpr size_t kMaxSlabs = 16;
// NVIDIA's library takes slabs of 16 GiB (and more); slabs are allocated on
// first use, so the bound is the largest pinned-memory budget (2 TiB).
constexpr size_t kMaxSlabSizeKb = size_t{1} << 31;
constexpr size_t kMaxSlabCount = 65536;
constexpr size_t kMaxPathLen = PATH_MAX - 1;

struct SizeTParam {
  CUFileSizeTConfigParameter_t param;
  const char *key;
  size_t Config::*field;
  size_t min;
  size_t max;
  size_t step;  // value % step == 0 (KiB sizes are whole 4 KiB pages)
};

// The ranges are documented in docs/CONFIG.md; keep both in step.
constexpr SizeTParam kSizeTParams[] = {
    {CUFILE_PARAM_PROFILE_STATS, "profile.cufile_stats", &Config::stats_level, 0, 3, 1},
    {CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH, "execution.max_io_queue_depth",
     &Config::max_io_queue_depth, 1, 32768, 1},
    {CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, "execution.max_io_threads", &Config::max_io_threads, 0,
     256, 1},
    {CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB, "execution.min_io_threshold_size_kb",
     &Config::min_io_threshold_size_kb, 4, size_t{1} << 20, 4},
    {CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, "execution.max_request_parallelism",
     &Config::max_request_parallelism, 0, 256, 1},
    {CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, "properties.max_direct_io_size_kb",
     &Config::max_direct_io_size_kb, 4, size_t{1} << 20, 4},
    {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, "properties.max_device_cache_size_kb",
     &Config::max_device_cache_size_kb, 4, size_t{1} << 30, 4},
    {CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB, "properties.per_buffer_cache_size_kb",
     &Config::per_buffer_cache_size_kb, 4, size_t{1} << 20, 4},
    {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
     "properties.max_device_pinned_mem_size_kb", &Config::max_device_pinned_mem_size_kb, 4,
     size_t{1} << 31, 4},
    {CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, "properties.io_batchsize", &Config::io_batchsize, 1,
     4096, 1},
    {CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, "properties.poll_mode_max_size_kb",
     &Config::poll_mode_max_size_kb, 4, size_t{1} << 20, 4},
    {CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, "properties.batch_io_timeout_msecs",
     &Config::batch_io_timeout_ms, 0, 3600000, 1},
};

struct BoolParam {
  CUFileBoolConfigParameter_t param;
  const char *key;
  bool Config::*field;
};

constexpr BoolParam kBoolParams[] = {
    {CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, "properties.use_poll_mode", &Config::use_poll_mode},
    {CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, "properties.allow_compat_mode",
     &Config::allow_compat_mode},
    {CUFILE_PARAM_FORCE_COMPAT_MODE, "properties.force_compat_mode", &Config::force_compat_mode},
    {CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE, "miscellaneous.api_check_aggressive",
     &Config::api_check_aggressive},
    {CUFILE_PARAM_EXECUTION_PARALLEL_IO, "execution.parallel_io", &Config::parallel_io},
    {CUFILE_PARAM_PROFILE_NVTX, "profile.nvtx", &Config::nvtx},
    {CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY, "properties.allow_system_memory",
     &Config::allow_system_memory},
    {CUFILE_PARAM_USE_PCIP2PDMA, "properties.use_pci_p2pdma", &Config::use_pci_p2pdma},
    {CUFILE_PARAM_PREFER_IO_URING, "properties.prefer_io_uring", &Config::prefer_io_uring},
    {CUFILE_PARAM_FORCE_ODIRECT_MODE, "properties.force_odirect_mode", &Config::force_odirect_mode},
    {CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION, "properties.skip_topology_detection",
     &Config::skip_topology_detection},
    {CUFILE_PARAM_STREAM_MEMOPS_BYPASS, "properties.stream_memops_bypass",
     &Config::stream_memops_bypass},
};

const SizeTParam *FindSizeT(CUFileSizeTConfigParameter_t param) {
  for (const SizeTParam &p : kSizeTParams)
    if (p.param == param) return &p;
  return nullptr;
}

const BoolParam *FindBool(CUFileBoolConfigParameter_t param) {
  for (const BoolParam &p : kBoolParams)
    if (p.param == param) return &p;
  return nullptr;
}

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

bool CheckSlabLength(size_t len, std::string *why) {
  if (len >= 1 && len <= kMaxSlabs) return true;
  *why = "needs 1 to " + std::to_string(kMaxSlabs) + " entries, got " + std::to_string(len);
  return false;
}

}  // namespace

Status SizeTParamRange(CUFileSizeTConfigParameter_t param, size_t *min_value, size_t *max_value) {
  const SizeTParam *p = FindSizeT(param);
  if (!p || !min_value || !max_value) return Invalid();
  *min_value = p->min;
  *max_value = p->max;
  return Status::Ok();
}

bool CheckSizeTParam(CUFileSizeTConfigParameter_t param, size_t value, std::string *why) {
  const SizeTParam *p = FindSizeT(param);
  if (!p) {
    *why = "unknown parameter " + std::to_string(static_cast<int>(param));
    return false;
  }
  if (value < p->min || value > p->max) {
    *why = "must be in [" + std::to_string(p->min) + ", " + std::to_string(p->max) + "]";
    return false;
  }
  if (value % p->step != 0) {
    *why = "must be a multiple of " + std::to_string(p->step);
    return false;
  }
  return true;
}

bool CheckSlabSizes(const std::vector<size_t> &sizes, std::string *why) {
  if (!CheckSlabLength(sizes.size(), why)) return false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] >= 4 && sizes[i] <= kMaxSlabSizeKb && sizes[i] % 4 == 0) continue;
    *why = "entry " + std::to_string(i) + " (" + std::to_string(sizes[i]) +
           ") must be a multiple of 4 in [4, " + std::to_string(kMaxSlabSizeKb) + "]";
    return false;
  }
  return true;
}

bool CheckSlabCounts(const std::vector<size_t> &counts, std::string *why) {
  if (!CheckSlabLength(counts.size(), why)) return false;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] >= 1 && counts[i] <= kMaxSlabCount) continue;
    *why = "entry " + std::to_string(i) + " (" + std::to_string(counts[i]) + ") must be in [1, " +
           std::to_string(kMaxSlabCount) + "]";
    return false;
  }
  return true;
}

const char *SizeTParamKey(CUFileSizeTConfigParameter_t param) {
  const SizeTParam *p = FindSizeT(param);
  return p ? p->key : nullptr;
}

const char *BoolParamKey(CUFileBoolConfigParameter_t param) {
  const BoolParam *p = FindBool(param);
  return p ? p->key : nullptr;
}

const char *StringParamKey(CUFileStringConfigParameter_t param) {
  switch (param) {
    case CUFILE_PARAM_LOGGING_LEVEL:
      return "logging.level";
    case CUFILE_PARAM_ENV_LOGFILE_PATH:
      return "logging.file_path";  // no JSON key: CUFILE_LOGFILE_PATH or the API
    case CUFILE_PARAM_LOG_DIR:
      return "logging.dir";
  }
  return nullptr;
}

Status StageSizeTParam(CUFileSizeTConfigParameter_t param, size_t value, std::string *why) {
  if (!CheckSizeTParam(param, value, why)) return Invalid();
  std::lock_guard<std::mutex> lock(g_mu);
  g_staged.sizes[param] = value;
  return Status::Ok();
}

Status StageBoolParam(CUFileBoolConfigParameter_t param, bool value) {
  if (!FindBool(param)) return Invalid();
  std::lock_guard<std::mutex> lock(g_mu);
  g_staged.bools[param] = value;
  return Status::Ok();
}

Status StageStringParam(CUFileStringConfigParameter_t param, const char *value, std::string *why) {
  if (!StringParamKey(param)) {
    *why = "unknown parameter " + std::to_string(static_cast<int>(param));
    return Invalid();
  }
  if (!value) {
    *why = "NULL string";
    return Invalid();
  }
  std::string text = value;
  if (param == CUFILE_PARAM_LOGGING_LEVEL) {
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
  const SizeTParam *p = FindSizeT(param);
  if (!p || !value) return Invalid();
  *value = cfg.*(p->field);
  return Status::Ok();
}

Status ReadBoolParam(const Config &cfg, CUFileBoolConfigParameter_t param, bool *value) {
  const BoolParam *p = FindBool(param);
  if (!p || !value) return Invalid();
  *value = cfg.*(p->field);
  return Status::Ok();
}

Status ReadStringParam(const Config &cfg, CUFileStringConfigParameter_t param, std::string *value) {
  if (!value) return Invalid();
  switch (param) {
    case CUFILE_PARAM_LOGGING_LEVEL:
      *value = LogLevelName(cfg.log_level);
      return Status::Ok();
    case CUFILE_PARAM_ENV_LOGFILE_PATH:
      *value = cfg.log_file_path;
      return Status::Ok();
    case CUFILE_PARAM_LOG_DIR:
      *value = cfg.log_dir;
      return Status::Ok();
  }
  return Invalid();
}

void ApplyStagedParams(Config &cfg, bool clear) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto &[param, value] : g_staged.sizes) {
    const SizeTParam *p = FindSizeT(param);
    cfg.*(p->field) = value;
    cfg.sources[p->key] = ConfigSource::kApi;
  }
  for (const auto &[param, value] : g_staged.bools) {
    const BoolParam *p = FindBool(param);
    cfg.*(p->field) = value;
    cfg.sources[p->key] = ConfigSource::kApi;
  }
  for (const auto &[param, value] : g_staged.strings) {
    if (param == CUFILE_PARAM_LOGGING_LEVEL)
      ParseLogLevel(value, &cfg.log_level);  // validated when staged
    else if (param == CUFILE_PARAM_ENV_LOGFILE_PATH)
      cfg.log_file_path = value;
    else
      cfg.log_dir = value;
    cfg.sources[StringParamKey(param)] = ConfigSource::kApi;
  }
  if (g_staged.has_slabs) {
    cfg.posix_pool_slab_size_kb = g_staged.slab_sizes;
    cfg.posix_pool_slab_count = g_staged.slab_counts;
    cfg.sources["properties.posix_pool_slab_size_kb"] = ConfigSource::kApi;
    cfg.sources["properties.posix_pool_slab_count"] = ConfigSource::kApi;
  }
  if (clear) g_staged = Staged();
}

Config StagedConfig() {
  Config cfg = LoadConfigOnce();  // outside g_mu: loading logs and reads files
  ApplyStagedParams(cfg, /*clear=*/false);
  return cfg;
}

}  // namespace ufile
