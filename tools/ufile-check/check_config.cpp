// SPDX-License-Identifier: Apache-2.0
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <variant>

#include "base/config_keys.h"
#include "checks.h"
#include "ufile/version.h"

namespace ufile::check {
namespace {

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
  // Every key with a value, an inert one saying why it has no effect; inert
  // keys without a value only where a file names them.
  for (const ConfigKey &row : ConfigKeys()) {
    if (!row.listed || std::holds_alternative<std::monostate>(row.field)) continue;
    std::string line = ConfigValueText(cfg, row) + "  (" + Source(cfg, row.key) + ")";
    if (row.inert) line += std::string("; inert: ") + row.inert;
    s.Add(row.key, line);
  }
  for (const std::string &k : cfg.inert_keys) {
    const ConfigKey *row = FindJsonKey(k);
    if (row && std::holds_alternative<std::monostate>(row->field))
      s.Add(k, std::string("accepted; inert: ") + row->inert);
  }
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
  // Staging pinned past max_device_pinned_mem_size_kb stays unpinned.
  const unsigned long long bound = 1024ULL * cfg.max_device_pinned_mem_size_kb;
  std::string what = " (posix_pool_slab_size_kb x posix_pool_slab_count, allocated on demand";
  if (bound < pool) {
    what += "; pinned up to max_device_pinned_mem_size_kb, " + Bytes(bound) + ")";
    pool = bound;
  } else {
    what += ")";
  }
  s.Add("pinned staging pool", Bytes(pool) + what);
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
