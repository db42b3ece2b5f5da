// SPDX-License-Identifier: Apache-2.0
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "checks.h"
#include "ufile/version.h"

namespace ufile::check {
namespace {

using Getter = std::function<std::string(const Config &)>;

std::string Num(size_t v) {
  return std::to_string(v);
}
std::string Flag(bool v) {
  return v ? "true" : "false";
}
std::string List(const std::vector<size_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
std::string Engine(EngineKind e) {
  return e == EngineKind::kIoUring      ? "io_uring"
         : e == EngineKind::kThreadPool ? "thread_pool"
                                        : "auto";
}

// Every key ufile acts on, in cufile.json order.
// clang-format off
#define UFILE_NUM(key, field) {key, [](const Config &c) { return Num(c.field); }}
#define UFILE_AUTO(key, field) \
  {key, [](const Config &c) { return c.field ? Num(c.field) : "0 (auto)"; }}
#define UFILE_FLAG(key, field) {key, [](const Config &c) { return Flag(c.field); }}
#define UFILE_LIST(key, field) {key, [](const Config &c) { return List(c.field); }}
// clang-format on
const std::vector<std::pair<const char *, Getter>> &Keys() {
  static const std::vector<std::pair<const char *, Getter>> keys = {
      {"logging.level", [](const Config &c) { return std::string(LogLevelName(c.log_level)); }},
      {"logging.dir", [](const Config &c) { return c.log_dir.empty() ? "(cwd)" : c.log_dir; }},
      {"logging.file_path",
       [](const Config &c) { return c.log_file_path.empty() ? "(none)" : c.log_file_path; }},
      UFILE_FLAG("profile.nvtx", nvtx),
      UFILE_NUM("profile.cufile_stats", stats_level),
      UFILE_NUM("execution.max_io_queue_depth", max_io_queue_depth),
      UFILE_AUTO("execution.max_io_threads", max_io_threads),
      UFILE_FLAG("execution.parallel_io", parallel_io),
      UFILE_NUM("execution.min_io_threshold_size_kb", min_io_threshold_size_kb),
      UFILE_AUTO("execution.max_request_parallelism", max_request_parallelism),
      UFILE_NUM("properties.max_direct_io_size_kb", max_direct_io_size_kb),
      UFILE_NUM("properties.max_device_cache_size_kb", max_device_cache_size_kb),
      UFILE_NUM("properties.per_buffer_cache_size_kb", per_buffer_cache_size_kb),
      UFILE_NUM("properties.max_device_pinned_mem_size_kb", max_device_pinned_mem_size_kb),
      UFILE_LIST("properties.posix_pool_slab_size_kb", posix_pool_slab_size_kb),
      UFILE_LIST("properties.posix_pool_slab_count", posix_pool_slab_count),
      UFILE_FLAG("properties.use_poll_mode", use_poll_mode),
      UFILE_NUM("properties.poll_mode_max_size_kb", poll_mode_max_size_kb),
      UFILE_FLAG("properties.allow_compat_mode", allow_compat_mode),
      UFILE_FLAG("properties.force_compat_mode", force_compat_mode),
      UFILE_FLAG("properties.allow_system_memory", allow_system_memory),
      UFILE_NUM("properties.io_batchsize", io_batchsize),
      UFILE_NUM("properties.batch_io_timeout_msecs", batch_io_timeout_ms),
      UFILE_FLAG("properties.prefer_io_uring", prefer_io_uring),
      UFILE_FLAG("properties.force_odirect_mode", force_odirect_mode),
      UFILE_FLAG("properties.skip_topology_detection", skip_topology_detection),
      UFILE_FLAG("properties.stream_memops_bypass", stream_memops_bypass),
      UFILE_FLAG("fs.generic.posix_unaligned_writes", posix_unaligned_writes),
      UFILE_FLAG("miscellaneous.api_check_aggressive", api_check_aggressive),
      {"ufile.engine", [](const Config &c) { return Engine(c.engine); }},
  };
  return keys;
}
#undef UFILE_NUM
#undef UFILE_AUTO
#undef UFILE_FLAG
#undef UFILE_LIST

std::string SystemJsonPath() {
  const char *p = std::getenv("UFILE_SYSTEM_JSON_PATH");
  return p && *p ? p : "/etc/cufile.json";
}

std::string EnvJsonPath() {
  const char *p = std::getenv("CUFILE_ENV_PATH_JSON");
  return p && *p ? p : "";
}

// "default", "/etc/cufile.json", "environment", ...
std::string Source(const Config &cfg, const std::string &key) {
  auto it = cfg.sources.find(key);
  const auto &ignored = cfg.vendor_defaults_ignored;
  if (std::find(ignored.begin(), ignored.end(), key) != ignored.end())
    return "default: the system file's value is NVIDIA's shipped one, which ufile treats as unset";
  if (it == cfg.sources.end()) return "default";
  switch (it->second) {
    case ConfigSource::kSystemJson:
      return SystemJsonPath();
    case ConfigSource::kEnvJson:
      return EnvJsonPath() + " (CUFILE_ENV_PATH_JSON)";
    default:
      return ConfigSourceName(it->second);
  }
}

void ConfigFiles(Section &s) {
  auto file = [&](const std::string &key, const std::string &path) {
    if (path.empty()) {
      s.Add(key, "not set");
      return;
    }
    if (access(path.c_str(), R_OK) == 0)
      s.Add(key, path + " (read)", Status::kOk);
    else if (access(path.c_str(), F_OK) == 0)
      s.Add(key, path + " (exists but is not readable)", Status::kWarn,
            "make it readable (chmod a+r " + path + ") or its settings are ignored");
    else
      s.Add(key, path + " (absent: its layer is skipped)");
  };
  file("system file", SystemJsonPath());
  const std::string env = EnvJsonPath();
  if (!env.empty() && access(env.c_str(), F_OK) != 0)
    s.Add("CUFILE_ENV_PATH_JSON", env + " (absent)", Status::kWarn,
          "point CUFILE_ENV_PATH_JSON at an existing cufile.json, or unset it");
  else
    file("CUFILE_ENV_PATH_JSON", env);
}

}  // namespace

void CheckLibrary(Report &report) {
  Section &s = report.AddSection("ufile");
  s.Add("version",
        Format("%d.%d.%d", UFILE_VERSION_MAJOR, UFILE_VERSION_MINOR, UFILE_VERSION_PATCH));
  s.Add("cuFile API", Format("%d.%d (cuFileGetVersion %d)", UFILE_CUFILE_API_VERSION / 1000,
                             UFILE_CUFILE_API_VERSION % 1000 / 10, UFILE_CUFILE_API_VERSION));
  s.Add("nvidia-fs / GDS kernel driver", "not needed (ufile works in user space)");
}

void CheckConfig(Report &report, const Config &cfg) {
  Section &s = report.AddSection("Configuration");
  ConfigFiles(s);
  for (const auto &[key, get] : Keys()) s.Add(key, get(cfg) + "  (" + Source(cfg, key) + ")");
  for (const std::string &k : cfg.inert_keys) s.Add(k, "accepted; no effect without nvidia-fs");
  for (const std::string &k : cfg.unknown_keys)
    s.Add(k, "unknown key, ignored", Status::kWarn,
          "remove it or fix its spelling (docs/CONFIG.md lists the keys)");
}

void CheckMemlock(Report &report, const Config &cfg) {
  Section &s = report.AddSection("Locked memory");
  unsigned long long pool = 0;
  for (size_t i = 0; i < cfg.posix_pool_slab_size_kb.size() && i < cfg.posix_pool_slab_count.size();
       ++i)
    pool += 1024ULL * cfg.posix_pool_slab_size_kb[i] * cfg.posix_pool_slab_count[i];
  s.Add("pinned staging pool", Bytes(pool) +
                                   " (posix_pool_slab_size_kb x posix_pool_slab_count, "
                                   "allocated on demand)");
  struct rlimit rl;
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) {
    s.Add("RLIMIT_MEMLOCK", "unknown", Status::kWarn, "");
    return;
  }
  if (rl.rlim_cur == RLIM_INFINITY) {
    s.Add("RLIMIT_MEMLOCK", "unlimited", Status::kOk);
    return;
  }
  const auto limit = static_cast<unsigned long long>(rl.rlim_cur);
  if (limit >= pool) {
    s.Add("RLIMIT_MEMLOCK", Bytes(limit) + " (enough for the pool)", Status::kOk);
    return;
  }
  s.Add("RLIMIT_MEMLOCK",
        Bytes(limit) + " < pool " + Bytes(pool) +
            ": buffers pinned or registered with io_uring past the limit fail; ufile then uses "
            "unpinned, unregistered buffers (correct, slower)",
        Status::kWarn,
        "raise it: ulimit -l unlimited (shell), LimitMEMLOCK=infinity (systemd), "
        "--ulimit memlock=-1 (docker), memlock in /etc/security/limits.conf; or shrink "
        "properties.posix_pool_slab_count");
}

}  // namespace ufile::check
