// SPDX-License-Identifier: Apache-2.0
// The configuration key table (base/config_keys.h) and its look-ups.
#include "base/config_keys.h"

#include <algorithm>
#include <iterator>

namespace ufile {
namespace {

constexpr size_t k1M = size_t{1} << 20;

// Why inert keys have no effect (ufile-check prints these).
constexpr const char *kNeedsNvfs = "needs nvidia-fs";
constexpr const char *kNoPolling =
    "ufile has no completion polling: it waits for the kernel's completion (io_uring or pread)";
constexpr const char *kNoGpuCache =
    "ufile has no GPU bounce buffers: it stages through host buffers "
    "(properties.posix_pool_slab_*)";

// A key that needs nvidia-fs: any value is accepted and none is stored.
constexpr ConfigKey Inert(const char *key) {
  return {.key = key, .inert = kNeedsNvfs};
}

// Rows in cufile.json order: ufile-check lists them, and the environment
// overrides are read, in this order.
// clang-format off
constexpr ConfigKey kKeys[] = {
    {.key = "logging.level", .field = &Config::log_level, .param = CUFILE_PARAM_LOGGING_LEVEL,
     .env = "CUFILE_LOGGING_LEVEL"},
    {.key = "logging.dir", .field = &Config::log_dir, .param = CUFILE_PARAM_LOG_DIR,
     .unset_text = "(cwd)"},
    {.key = "logging.file_path", .field = &Config::log_file_path,
     .param = CUFILE_PARAM_ENV_LOGFILE_PATH, .env = "CUFILE_LOGFILE_PATH", .json = false,
     .unset_text = "(none)"},
    {.key = "profile.nvtx", .field = &Config::nvtx, .param = CUFILE_PARAM_PROFILE_NVTX},
    {.key = "profile.cufile_stats", .field = &Config::stats_level,
     .param = CUFILE_PARAM_PROFILE_STATS, .min = 0, .max = 3},
    {.key = "execution.max_io_queue_depth", .field = &Config::max_io_queue_depth,
     .param = CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH, .min = kMinIoQueueDepth,
     .max = kMaxIoQueueDepth},
    {.key = "execution.max_io_threads", .field = &Config::max_io_threads,
     .param = CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, .min = 0, .max = 256,
     .unset_text = "0 (auto)"},
    {.key = "execution.parallel_io", .field = &Config::parallel_io,
     .param = CUFILE_PARAM_EXECUTION_PARALLEL_IO},
    {.key = "execution.min_io_threshold_size_kb", .field = &Config::min_io_threshold_size_kb,
     .param = CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB, .min = 4, .max = k1M, .step = 4},
    {.key = "execution.max_request_parallelism", .field = &Config::max_request_parallelism,
     .param = CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, .min = 0, .max = 256,
     .unset_text = "0 (auto)"},
    {.key = "properties.max_direct_io_size_kb", .field = &Config::max_direct_io_size_kb,
     .param = CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, .min = 4, .max = k1M, .step = 4},
    // The KiB maxima of the cache and pinned sizes fit the unsigned int
    // fields of CUfileDrvProps_t.
    {.key = "properties.max_device_cache_size_kb", .field = &Config::max_device_cache_size_kb,
     .param = CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, .min = 4, .max = size_t{1} << 30,
     .step = 4, .inert = kNoGpuCache},
    {.key = "properties.per_buffer_cache_size_kb", .field = &Config::per_buffer_cache_size_kb,
     .param = CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB, .min = 4, .max = k1M, .step = 4,
     .inert = kNoGpuCache},
    {.key = "properties.max_device_pinned_mem_size_kb",
     .field = &Config::max_device_pinned_mem_size_kb,
     .param = CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB, .min = 4,
     .max = size_t{1} << 31, .step = 4},
    // NVIDIA's library takes slabs of 16 GiB (and more); slabs are allocated
    // on first use, so the bound is the largest pinned-memory budget (2 TiB).
    {.key = "properties.posix_pool_slab_size_kb", .field = &Config::posix_pool_slab_size_kb,
     .param = CUFILE_PARAM_POSIX_POOL_SLAB_SIZE_KB, .min = 4, .max = size_t{1} << 31, .step = 4},
    {.key = "properties.posix_pool_slab_count", .field = &Config::posix_pool_slab_count,
     .param = CUFILE_PARAM_POSIX_POOL_SLAB_COUNT, .min = 1, .max = 65536},
    {.key = "properties.use_poll_mode", .field = &Config::use_poll_mode,
     .param = CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, .inert = kNoPolling},
    {.key = "properties.poll_mode_max_size_kb", .field = &Config::poll_mode_max_size_kb,
     .param = CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, .min = 4, .max = k1M, .step = 4,
     .inert = kNoPolling},
    {.key = "properties.use_pci_p2pdma", .field = &Config::use_pci_p2pdma,
     .param = CUFILE_PARAM_USE_PCIP2PDMA, .env = "CUFILE_USE_PCIP2PDMA", .inert = kNeedsNvfs},
    {.key = "properties.allow_compat_mode", .field = &Config::allow_compat_mode,
     .param = CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, .env = "CUFILE_ALLOW_COMPAT_MODE"},
    {.key = "properties.force_compat_mode", .field = &Config::force_compat_mode,
     .param = CUFILE_PARAM_FORCE_COMPAT_MODE, .env = "CUFILE_FORCE_COMPAT_MODE"},
    {.key = "properties.allow_system_memory", .field = &Config::allow_system_memory,
     .param = CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY},
    {.key = "properties.gds_rdma_write_support", .field = &Config::gds_rdma_write_support,
     .inert = kNeedsNvfs},
    {.key = "properties.io_batchsize", .field = &Config::io_batchsize,
     .param = CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, .min = 1, .max = 4096},
    {.key = "properties.batch_io_timeout_msecs", .field = &Config::batch_io_timeout_ms,
     .param = CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, .min = 0, .max = 3600000},
    {.key = "properties.io_priority", .field = &Config::io_priority,
     .choices = "default, low, med, high", .inert = kNeedsNvfs},
    {.key = "properties.prefer_io_uring", .field = &Config::prefer_io_uring,
     .param = CUFILE_PARAM_PREFER_IO_URING},
    {.key = "properties.force_odirect_mode", .field = &Config::force_odirect_mode,
     .param = CUFILE_PARAM_FORCE_ODIRECT_MODE},
    {.key = "properties.skip_topology_detection", .field = &Config::skip_topology_detection,
     .param = CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION, .env = "CUFILE_SKIP_TOPOLOGY_DETECTION",
     .inert = "ufile detects no PCIe topology"},
    {.key = "properties.stream_memops_bypass", .field = &Config::stream_memops_bypass,
     .param = CUFILE_PARAM_STREAM_MEMOPS_BYPASS},
    Inert("properties.rdma_dev_addr_list"),
    Inert("properties.rdma_load_balancing_policy"),
    Inert("properties.rdma_dc_key"),
    Inert("properties.rdma_access_mask"),
    Inert("properties.rdma_dynamic_routing"),
    Inert("properties.rdma_dynamic_routing_order"),
    {.key = "fs.generic.posix_unaligned_writes", .field = &Config::posix_unaligned_writes,
     .inert = "ufile always writes the unaligned edges of O_DIRECT writes through a buffered "
              "descriptor"},
    Inert("fs.beegfs.posix_gds_min_kb"),
    Inert("fs.beegfs.rdma_dev_addr_list"),
    Inert("fs.beegfs.mount_table"),
    Inert("fs.lustre.posix_gds_min_kb"),
    Inert("fs.lustre.rdma_dev_addr_list"),
    Inert("fs.lustre.mount_table"),
    Inert("fs.nfs.rdma_dev_addr_list"),
    Inert("fs.nfs.mount_table"),
    Inert("fs.gpfs.gds_write_support"),
    Inert("fs.gpfs.gds_async_support"),
    Inert("fs.gpfs.rdma_dev_addr_list"),
    Inert("fs.gpfs.mount_table"),
    Inert("fs.weka.rdma_write_support"),
    Inert("denylist.drivers"),
    Inert("denylist.devices"),
    Inert("denylist.mounts"),
    Inert("denylist.filesystems"),
    {.key = "miscellaneous.api_check_aggressive", .field = &Config::api_check_aggressive,
     .param = CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE,
     .inert = "ufile makes every argument check on every call"},
    {.key = "ufile.io_uring_fixed_buffers", .field = &Config::io_uring_fixed_buffers,
     .env = "UFILE_IO_URING_FIXED_BUFFERS", .listed = false},
    {.key = "ufile.io_uring_fixed_files", .field = &Config::io_uring_fixed_files,
     .env = "UFILE_IO_URING_FIXED_FILES", .listed = false},
    {.key = "ufile.page_cache_reads", .field = &Config::page_cache_reads,
     .env = "UFILE_PAGE_CACHE_READS", .listed = false},
    {.key = "ufile.prepare_at_open", .field = &Config::prepare_at_open,
     .env = "UFILE_PREPARE_AT_OPEN", .listed = false},
    {.key = "ufile.engine", .field = &Config::engine, .env = "UFILE_ENGINE"},
};
// clang-format on

const char *const kSections[] = {
    "logging",   "profile", "execution", "properties", "fs",       "fs.generic",    "fs.beegfs",
    "fs.lustre", "fs.nfs",  "fs.gpfs",   "fs.weka",    "denylist", "miscellaneous", "ufile"};

// The row whose field holds a T and whose parameter is param.
template <class T>
const ConfigKey *FindParamOf(int param) {
  for (const ConfigKey &row : kKeys)
    if (std::holds_alternative<T Config::*>(row.field) && row.param != kNoParam &&
        row.param == param)
      return &row;
  return nullptr;
}

std::string List(const std::vector<size_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string Range(const ConfigKey &row) {
  return "[" + std::to_string(row.min) + ", " + std::to_string(row.max) + "]";
}

}  // namespace

std::span<const ConfigKey> ConfigKeys() {
  return kKeys;
}

const ConfigKey *FindJsonKey(const std::string &dotted) {
  for (const ConfigKey &row : kKeys)
    if (row.json && dotted == row.key) return &row;
  return nullptr;
}

const ConfigKey *FindFieldKey(const ConfigField &field) {
  for (const ConfigKey &row : kKeys)
    if (row.field == field) return &row;
  return nullptr;
}

const ConfigKey *FindParamKey(CUFileSizeTConfigParameter_t param) {
  return FindParamOf<size_t>(static_cast<int>(param));
}

const ConfigKey *FindParamKey(CUFileBoolConfigParameter_t param) {
  return FindParamOf<bool>(static_cast<int>(param));
}

const ConfigKey *FindParamKey(CUFileStringConfigParameter_t param) {
  const ConfigKey *row = FindParamOf<std::string>(static_cast<int>(param));
  return row ? row : FindParamOf<LogLevel>(static_cast<int>(param));
}

const ConfigKey *FindParamKey(CUFileArrayConfigParameter_t param) {
  return FindParamOf<std::vector<size_t>>(static_cast<int>(param));
}

bool IsConfigSection(const std::string &dotted) {
  return std::any_of(std::begin(kSections), std::end(kSections),
                     [&](const char *s) { return dotted == s; });
}

bool CheckKeyValue(const ConfigKey &row, size_t value, std::string *why) {
  if (value < row.min || value > row.max) {
    *why = "must be in " + Range(row);
    return false;
  }
  if (value % row.step != 0) {
    *why = "must be a multiple of " + std::to_string(row.step);
    return false;
  }
  return true;
}

bool CheckKeyArray(const ConfigKey &row, const std::vector<size_t> &values, std::string *why) {
  if (values.empty() || values.size() > kMaxSlabs) {
    *why = "needs 1 to " + std::to_string(kMaxSlabs) + " entries, got " +
           std::to_string(values.size());
    return false;
  }
  std::string ignored;
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t v = values[i];
    if (CheckKeyValue(row, v, &ignored)) continue;
    *why = "entry " + std::to_string(i) + " (" + std::to_string(v) + ") must be " +
           (row.step > 1 ? "a multiple of " + std::to_string(row.step) + " in " : "in ") +
           Range(row);
    return false;
  }
  return true;
}

std::string ConfigValueText(const Config &cfg, const ConfigKey &row) {
  auto unset = [&](bool is_unset, std::string value) {
    return is_unset && row.unset_text ? std::string(row.unset_text) : value;
  };
  const ConfigField &f = row.field;
  if (auto *b = std::get_if<bool Config::*>(&f)) return cfg.*(*b) ? "true" : "false";
  if (auto *n = std::get_if<size_t Config::*>(&f))
    return unset(cfg.*(*n) == 0, std::to_string(cfg.*(*n)));
  if (auto *v = std::get_if<std::vector<size_t> Config::*>(&f)) return List(cfg.*(*v));
  if (auto *s = std::get_if<std::string Config::*>(&f))
    return unset((cfg.*(*s)).empty(), cfg.*(*s));
  if (auto *l = std::get_if<LogLevel Config::*>(&f)) return LogLevelName(cfg.*(*l));
  if (auto *e = std::get_if<EngineKind Config::*>(&f)) return EngineKindName(cfg.*(*e));
  return "";
}

}  // namespace ufile
