// SPDX-License-Identifier: Apache-2.0
// Config loading: cufile.json layers and the environment overrides.
// Every key of NVIDIA's cufile.json is in kKeys: applied to a Config field,
// or recorded as inert (it needs nvidia-fs), or both. A bad value is logged
// with its dotted key and skipped; a bad file is logged and skipped whole.
// docs/CONFIG.md is the user-facing description of every key here.
#include "base/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "base/log.h"
#include "base/params.h"

namespace ufile {
namespace {

using json = nlohmann::json;
using Applier = bool (*)(Config &, const json &, std::string *why);

// --- appliers: one value, checked, into one Config field --------------------

template <bool Config::*F>
bool SetBool(Config &c, const json &v, std::string *why) {
  if (!v.is_boolean()) {
    *why = "expected true or false";
    return false;
  }
  c.*F = v.get<bool>();
  return true;
}

template <size_t Config::*F, CUFileSizeTConfigParameter_t P>
bool SetSize(Config &c, const json &v, std::string *why) {
  if (!v.is_number_unsigned()) {
    *why = "expected a non-negative integer";
    return false;
  }
  size_t n = v.get<size_t>();
  if (!CheckSizeTParam(P, n, why)) return false;
  c.*F = n;
  return true;
}

bool SetLevel(Config &c, const json &v, std::string *why) {
  if (v.is_string() && ParseLogLevel(v.get<std::string>(), &c.log_level)) return true;
  *why = "expected one of NOTICE, ERROR, WARN, INFO, DEBUG, TRACE";
  return false;
}

bool SetLogDir(Config &c, const json &v, std::string *why) {
  if (!v.is_string()) {
    *why = "expected a directory path string";
    return false;
  }
  c.log_dir = v.get<std::string>();
  return true;
}

bool SetIoPriority(Config &c, const json &v, std::string *why) {
  static const char *const kValues[] = {"default", "low", "med", "high"};
  if (v.is_string()) {
    for (const char *ok : kValues)
      if (v.get<std::string>() == ok) {
        c.io_priority = ok;
        return true;
      }
  }
  *why = "expected one of default, low, med, high";
  return false;
}

std::string Lower(std::string text) {
  for (char &c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool ParseEngine(const std::string &raw, EngineKind *engine) {
  const std::string text = Lower(raw);  // any case, as booleans and log levels
  if (text == "auto")
    *engine = EngineKind::kAuto;
  else if (text == "io_uring")
    *engine = EngineKind::kIoUring;
  else if (text == "thread_pool")
    *engine = EngineKind::kThreadPool;
  else
    return false;
  return true;
}

bool SetEngine(Config &c, const json &v, std::string *why) {
  if (v.is_string() && ParseEngine(v.get<std::string>(), &c.engine)) return true;
  *why = "expected one of auto, io_uring, thread_pool";
  return false;
}

// --- the key table -----------------------------------------------------------

enum KeyFlags : unsigned {
  kInert = 1,      // means nothing without nvidia-fs: listed in Config::inert_keys
  kSlabSizes = 2,  // the two slab arrays are checked together, after the walk
  kSlabCounts = 4,
};

struct KeySpec {
  const char *key;
  Applier apply;  // nullptr: no Config field (inert keys only)
  unsigned flags;
};

#define UFILE_SIZE_KEY(key, field, param) \
  { key, SetSize<&Config::field, param>, 0 }
#define UFILE_BOOL_KEY(key, field, flags) \
  { key, SetBool<&Config::field>, flags }

const KeySpec kKeys[] = {
    {"logging.dir", SetLogDir, 0},
    {"logging.level", SetLevel, 0},
    UFILE_BOOL_KEY("profile.nvtx", nvtx, 0),
    UFILE_SIZE_KEY("profile.cufile_stats", stats_level, CUFILE_PARAM_PROFILE_STATS),
    UFILE_SIZE_KEY("execution.max_io_queue_depth", max_io_queue_depth,
                   CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH),
    UFILE_SIZE_KEY("execution.max_io_threads", max_io_threads,
                   CUFILE_PARAM_EXECUTION_MAX_IO_THREADS),
    UFILE_BOOL_KEY("execution.parallel_io", parallel_io, 0),
    UFILE_SIZE_KEY("execution.min_io_threshold_size_kb", min_io_threshold_size_kb,
                   CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB),
    UFILE_SIZE_KEY("execution.max_request_parallelism", max_request_parallelism,
                   CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM),
    UFILE_SIZE_KEY("properties.max_direct_io_size_kb", max_direct_io_size_kb,
                   CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB),
    UFILE_SIZE_KEY("properties.max_device_cache_size_kb", max_device_cache_size_kb,
                   CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB),
    UFILE_SIZE_KEY("properties.per_buffer_cache_size_kb", per_buffer_cache_size_kb,
                   CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB),
    UFILE_SIZE_KEY("properties.max_device_pinned_mem_size_kb", max_device_pinned_mem_size_kb,
                   CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB),
    {"properties.posix_pool_slab_size_kb", nullptr, kSlabSizes},
    {"properties.posix_pool_slab_count", nullptr, kSlabCounts},
    UFILE_BOOL_KEY("properties.use_poll_mode", use_poll_mode, 0),
    UFILE_SIZE_KEY("properties.poll_mode_max_size_kb", poll_mode_max_size_kb,
                   CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB),
    UFILE_BOOL_KEY("properties.use_pci_p2pdma", use_pci_p2pdma, kInert),
    UFILE_BOOL_KEY("properties.allow_compat_mode", allow_compat_mode, 0),
    UFILE_BOOL_KEY("properties.force_compat_mode", force_compat_mode, 0),
    UFILE_BOOL_KEY("properties.allow_system_memory", allow_system_memory, 0),
    UFILE_BOOL_KEY("properties.gds_rdma_write_support", gds_rdma_write_support, kInert),
    UFILE_SIZE_KEY("properties.io_batchsize", io_batchsize, CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE),
    UFILE_SIZE_KEY("properties.batch_io_timeout_msecs", batch_io_timeout_ms,
                   CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS),
    {"properties.io_priority", SetIoPriority, kInert},
    UFILE_BOOL_KEY("properties.prefer_io_uring", prefer_io_uring, 0),
    UFILE_BOOL_KEY("properties.force_odirect_mode", force_odirect_mode, 0),
    UFILE_BOOL_KEY("properties.skip_topology_detection", skip_topology_detection, 0),
    UFILE_BOOL_KEY("properties.stream_memops_bypass", stream_memops_bypass, 0),
    {"properties.rdma_dev_addr_list", nullptr, kInert},
    {"properties.rdma_load_balancing_policy", nullptr, kInert},
    {"properties.rdma_dc_key", nullptr, kInert},
    {"properties.rdma_access_mask", nullptr, kInert},
    {"properties.rdma_dynamic_routing", nullptr, kInert},
    {"properties.rdma_dynamic_routing_order", nullptr, kInert},
    UFILE_BOOL_KEY("fs.generic.posix_unaligned_writes", posix_unaligned_writes, 0),
    {"fs.beegfs.posix_gds_min_kb", nullptr, kInert},
    {"fs.beegfs.rdma_dev_addr_list", nullptr, kInert},
    {"fs.beegfs.mount_table", nullptr, kInert},
    {"fs.lustre.posix_gds_min_kb", nullptr, kInert},
    {"fs.lustre.rdma_dev_addr_list", nullptr, kInert},
    {"fs.lustre.mount_table", nullptr, kInert},
    {"fs.nfs.rdma_dev_addr_list", nullptr, kInert},
    {"fs.nfs.mount_table", nullptr, kInert},
    {"fs.gpfs.gds_write_support", nullptr, kInert},
    {"fs.gpfs.gds_async_support", nullptr, kInert},
    {"fs.gpfs.rdma_dev_addr_list", nullptr, kInert},
    {"fs.gpfs.mount_table", nullptr, kInert},
    {"fs.weka.rdma_write_support", nullptr, kInert},
    {"denylist.drivers", nullptr, kInert},
    {"denylist.devices", nullptr, kInert},
    {"denylist.mounts", nullptr, kInert},
    {"denylist.filesystems", nullptr, kInert},
    UFILE_BOOL_KEY("miscellaneous.api_check_aggressive", api_check_aggressive, 0),
    {"ufile.engine", SetEngine, 0},
    UFILE_BOOL_KEY("ufile.io_uring_fixed_buffers", io_uring_fixed_buffers, 0),
    UFILE_BOOL_KEY("ufile.io_uring_fixed_files", io_uring_fixed_files, 0),
    UFILE_BOOL_KEY("ufile.page_cache_reads", page_cache_reads, 0),
    UFILE_BOOL_KEY("ufile.prepare_at_open", prepare_at_open, 0),
};

#undef UFILE_SIZE_KEY
#undef UFILE_BOOL_KEY

const char *const kSections[] = {
    "logging",   "profile", "execution", "properties", "fs",       "fs.generic",    "fs.beegfs",
    "fs.lustre", "fs.nfs",  "fs.gpfs",   "fs.weka",    "denylist", "miscellaneous", "ufile"};

const KeySpec *FindKey(const std::string &dotted) {
  for (const KeySpec &k : kKeys)
    if (dotted == k.key) return &k;
  return nullptr;
}

bool IsSection(const std::string &dotted) {
  return std::any_of(std::begin(kSections), std::end(kSections),
                     [&](const char *s) { return dotted == s; });
}

void AddUnique(std::vector<std::string> &list, const std::string &item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

std::string Quoted(const std::string &text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends v to *out in compact JSON, stopping once *out is past limit. Each
// level adds a character, so the recursion is at most limit deep: json::dump
// recurses once per level and overflowed the stack on a value nested a
// million deep (a 4 MiB file of '['; found by tests/fuzz).
void Render(const json &v, size_t limit, std::string *out) {
  if (!v.is_array() && !v.is_object()) {
    *out += v.dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  out->push_back(v.is_array() ? '[' : '{');
  for (auto it = v.begin(); it != v.end() && out->size() <= limit; ++it) {
    if (it != v.begin()) out->push_back(',');
    if (v.is_object()) *out += Quoted(it.key()) + ":";
    Render(*it, limit, out);
  }
  out->push_back(v.is_array() ? ']' : '}');
}

// A short, printable rendering of a JSON value for a log line.
std::string Brief(const json &v) {
  std::string s;
  Render(v, 64, &s);
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

// A key as a log line shows it: at most 128 bytes (a 3 MB key made a 3 MB
// line), quoted and escaped if it holds a control character (a NUL would cut
// the line short, a newline split it).
std::string KeyForLog(const std::string &key) {
  constexpr size_t kMax = 128;
  std::string shown = key.size() > kMax ? key.substr(0, kMax) : key;
  for (unsigned char c : shown)
    if (c < 0x20 || c == 0x7f) {
      shown = Quoted(shown);
      break;
    }
  if (key.size() > kMax) shown += "... (" + std::to_string(key.size()) + " bytes)";
  return shown;
}

// --- the walk ---------------------------------------------------------------

struct Walk {
  Config &cfg;
  ConfigSource source;
  const std::string &origin;
  const json *slab_sizes = nullptr;
  const json *slab_counts = nullptr;
  // cfg.unknown_keys as a set: a file of a million unknown keys is linear.
  std::unordered_set<std::string> unknown_seen;
  size_t unknown_logged = 0;  // WARN lines for unknown keys of this file
};

// Unknown keys of one file: the first kMaxUnknownLogged get a WARN line each,
// the rest one line at the end of the file.
constexpr size_t kMaxUnknownLogged = 16;

void ApplyKey(Walk &w, const KeySpec &spec, const json &v) {
  if (spec.flags & kSlabSizes) w.slab_sizes = &v;
  if (spec.flags & kSlabCounts) w.slab_counts = &v;
  if (spec.flags & kInert) {
    AddUnique(w.cfg.inert_keys, spec.key);
    UFILE_LOG_DEBUG("%s: %s accepted, inert (needs nvidia-fs)", w.origin.c_str(), spec.key);
  }
  if (!spec.apply) return;
  std::string why;
  if (spec.apply(w.cfg, v, &why)) {
    w.cfg.sources[spec.key] = w.source;
  } else {
    UFILE_LOG_ERROR("%s: %s = %s: %s; value left as it was", w.origin.c_str(), spec.key,
                    Brief(v).c_str(), why.c_str());
  }
}

void ApplyObject(Walk &w, const json &obj, const std::string &prefix) {
  for (const auto &[name, value] : obj.items()) {
    std::string dotted = prefix.empty() ? name : prefix + "." + name;
    if (const KeySpec *spec = FindKey(dotted)) {
      ApplyKey(w, *spec, value);
    } else if (IsSection(dotted)) {
      if (value.is_object())
        ApplyObject(w, value, dotted);
      else
        UFILE_LOG_ERROR("%s: %s = %s: expected an object; section ignored", w.origin.c_str(),
                        dotted.c_str(), Brief(value).c_str());
    } else {
      if (w.unknown_seen.insert(dotted).second) w.cfg.unknown_keys.push_back(dotted);
      if (w.unknown_logged++ < kMaxUnknownLogged)
        UFILE_LOG_WARN("%s: unknown key %s ignored", w.origin.c_str(), KeyForLog(dotted).c_str());
    }
  }
}

// Reads a slab array; on error names its key and returns false.
bool ReadSlabArray(const Walk &w, const char *key, const json &v, bool sizes,
                   std::vector<size_t> *out) {
  std::string why;
  bool ok = v.is_array();
  if (!ok) why = "expected an array of non-negative integers";
  for (size_t i = 0; ok && i < v.size(); ++i) {
    if (!v[i].is_number_unsigned()) {
      why = "entry " + std::to_string(i) + " is not a non-negative integer";
      ok = false;
    } else {
      out->push_back(v[i].get<size_t>());
    }
  }
  if (ok) ok = sizes ? CheckSlabSizes(*out, &why) : CheckSlabCounts(*out, &why);
  if (!ok)
    UFILE_LOG_ERROR("%s: %s = %s: %s; slab arrays left as they were", w.origin.c_str(), key,
                    Brief(v).c_str(), why.c_str());
  return ok;
}

// The slab arrays pair up entry by entry, so they are applied together: a
// file may give one of them only if its length matches the other's.
void ApplySlabs(Walk &w) {
  static const char *const kSizesKey = "properties.posix_pool_slab_size_kb";
  static const char *const kCountsKey = "properties.posix_pool_slab_count";
  if (!w.slab_sizes && !w.slab_counts) return;
  std::vector<size_t> sizes = w.cfg.posix_pool_slab_size_kb;
  std::vector<size_t> counts = w.cfg.posix_pool_slab_count;
  if (w.slab_sizes) {
    sizes.clear();
    if (!ReadSlabArray(w, kSizesKey, *w.slab_sizes, true, &sizes)) return;
  }
  if (w.slab_counts) {
    counts.clear();
    if (!ReadSlabArray(w, kCountsKey, *w.slab_counts, false, &counts)) return;
  }
  if (sizes.size() != counts.size()) {
    UFILE_LOG_ERROR("%s: %s has %zu entries but %s has %zu; slab arrays left as they were",
                    w.origin.c_str(), kSizesKey, sizes.size(), kCountsKey, counts.size());
    return;
  }
  w.cfg.posix_pool_slab_size_kb = std::move(sizes);
  w.cfg.posix_pool_slab_count = std::move(counts);
  if (w.slab_sizes) w.cfg.sources[kSizesKey] = w.source;
  if (w.slab_counts) w.cfg.sources[kCountsKey] = w.source;
}

// --- environment ------------------------------------------------------------

const char *GetEnv(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool ParseBool(const std::string &raw, bool *value) {
  std::string text = Lower(raw);
  if (text == "true" || text == "1" || text == "yes" || text == "on")
    *value = true;
  else if (text == "false" || text == "0" || text == "no" || text == "off")
    *value = false;
  else
    return false;
  return true;
}

}  // namespace

bool ApplyJsonConfig(Config &cfg, const std::string &text, ConfigSource source,
                     const std::string &origin) {
  // The parser takes a NUL byte for the end of its input, so "{...}\0garbage"
  // would pass as the object alone.
  if (text.find('\0') != std::string::npos) {
    UFILE_LOG_ERROR("config: %s holds a NUL byte (not JSON text); whole file ignored",
                    origin.c_str());
    return false;
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded() || !doc.is_object()) {
    UFILE_LOG_ERROR("config: %s is not a JSON object; whole file ignored", origin.c_str());
    return false;
  }
  Walk w{cfg, source, origin};
  w.unknown_seen.insert(cfg.unknown_keys.begin(), cfg.unknown_keys.end());
  ApplyObject(w, doc, "");
  ApplySlabs(w);
  if (w.unknown_logged > kMaxUnknownLogged)
    UFILE_LOG_WARN("%s: %zu more unknown keys ignored", origin.c_str(),
                   w.unknown_logged - kMaxUnknownLogged);
  return true;
}

void ApplyEnvironment(Config &cfg) {
  if (const char *v = GetEnv("CUFILE_LOGGING_LEVEL")) {
    if (ParseLogLevel(v, &cfg.log_level))
      cfg.sources["logging.level"] = ConfigSource::kEnvironment;
    else
      UFILE_LOG_ERROR("config: CUFILE_LOGGING_LEVEL=%s is not a log level; ignored", v);
  }
  if (const char *v = GetEnv("CUFILE_LOGFILE_PATH")) {
    cfg.log_file_path = v;
    cfg.sources["logging.file_path"] = ConfigSource::kEnvironment;
  }
  static const struct {
    const char *name;
    const char *key;
    bool Config::*field;
  } kBools[] = {
      {"CUFILE_FORCE_COMPAT_MODE", "properties.force_compat_mode", &Config::force_compat_mode},
      {"CUFILE_ALLOW_COMPAT_MODE", "properties.allow_compat_mode", &Config::allow_compat_mode},
      {"CUFILE_USE_PCIP2PDMA", "properties.use_pci_p2pdma", &Config::use_pci_p2pdma},
      {"CUFILE_SKIP_TOPOLOGY_DETECTION", "properties.skip_topology_detection",
       &Config::skip_topology_detection},
      {"UFILE_IO_URING_FIXED_BUFFERS", "ufile.io_uring_fixed_buffers",
       &Config::io_uring_fixed_buffers},
      {"UFILE_IO_URING_FIXED_FILES", "ufile.io_uring_fixed_files", &Config::io_uring_fixed_files},
      {"UFILE_PAGE_CACHE_READS", "ufile.page_cache_reads", &Config::page_cache_reads},
      {"UFILE_PREPARE_AT_OPEN", "ufile.prepare_at_open", &Config::prepare_at_open},
  };
  for (const auto &b : kBools) {
    const char *v = GetEnv(b.name);
    if (!v) continue;
    if (ParseBool(v, &(cfg.*b.field)))
      cfg.sources[b.key] = ConfigSource::kEnvironment;
    else
      UFILE_LOG_ERROR("config: %s=%s is not true or false; ignored", b.name, v);
  }
  if (const char *v = GetEnv("UFILE_ENGINE")) {
    if (ParseEngine(v, &cfg.engine))
      cfg.sources["ufile.engine"] = ConfigSource::kEnvironment;
    else
      UFILE_LOG_ERROR("config: UFILE_ENGINE=%s is not auto, io_uring or thread_pool; ignored", v);
  }
}

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
  std::string upper = text;
  for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "WARNING") upper = "WARN";
  for (int i = 0; i <= static_cast<int>(LogLevel::kTrace); ++i) {
    LogLevel candidate = static_cast<LogLevel>(i);
    if (upper == LogLevelName(candidate)) {
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

}  // namespace ufile
