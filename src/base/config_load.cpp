// SPDX-License-Identifier: Apache-2.0
// Reading the configuration layers: the two JSON files and the environment.
// A file must be a regular file (a FIFO or device named by
// CUFILE_ENV_PATH_JSON would block the read forever): it is opened with
// O_NONBLOCK and checked with fstat before a byte is read.
//
// LoadConfigOnce keeps what it loaded while nothing it reads changed (the
// files' identity, size and times, the environment variables), so that
// getters called before open, the log's own configuration and the open
// itself parse the files once, and log each problem once; the driver's open
// forgets it, so that the next open reads afresh.
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <string>

#include "base/config.h"
#include "base/log.h"

namespace ufile {
namespace {

constexpr const char *kDefaultSystemJson = "/etc/cufile.json";
constexpr size_t kMaxJsonBytes = 4 << 20;
constexpr int kNotRegular = -1;  // ReadFile: not a regular file

const char *GetEnv(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Reads path into *text. Returns 0, an errno, or kNotRegular.
int ReadFile(const std::string &path, std::string *text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno;
  struct stat st {};
  int err = ::fstat(fd, &st) != 0 ? errno : 0;
  if (!err && !S_ISREG(st.st_mode)) err = kNotRegular;
  if (!err && static_cast<uint64_t>(st.st_size) > kMaxJsonBytes) err = EFBIG;
  char buf[16384];
  while (!err) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    text->append(buf, static_cast<size_t>(n));
    if (text->size() > kMaxJsonBytes) err = EFBIG;  // grew while read
  }
  ::close(fd);
  return err;
}

void LoadJsonFile(Config &cfg, const std::string &path, ConfigSource source, bool required) {
  std::string text;
  const int err = ReadFile(path, &text);
  if (err == ENOENT && !required) {
    UFILE_LOG_DEBUG("config: %s not found; skipped", path.c_str());
    return;
  }
  if (err == kNotRegular) {
    UFILE_LOG_ERROR("config: %s is not a regular file (a FIFO, device or directory); file "
                    "ignored",
                    path.c_str());
    return;
  }
  if (err != 0) {
    UFILE_LOG_ERROR("config: cannot read %s: %s; file ignored", path.c_str(),
                    err == EFBIG ? "larger than 4 MiB" : std::strerror(err));
    return;
  }
  if (ApplyJsonConfig(cfg, text, source, path))
    UFILE_LOG_DEBUG("config: applied %s (%s)", path.c_str(), ConfigSourceName(source));
}

// Everything LoadConfig reads, as one string: the environment variables and,
// for each file, its identity, size and modification/change times.
std::string InputsSignature() {
  // Every CUFILE_* and UFILE_* variable: a superset of those read, so that a
  // variable added to ApplyEnvironment needs no change here.
  std::string sig;
  for (char **e = environ; e && *e; ++e)
    if (std::strncmp(*e, "CUFILE_", 7) == 0 || std::strncmp(*e, "UFILE_", 6) == 0) {
      sig += *e;
      sig += '\n';
    }
  const char *system = GetEnv("UFILE_SYSTEM_JSON_PATH");
  const char *env = GetEnv("CUFILE_ENV_PATH_JSON");
  for (const char *path : {system ? system : kDefaultSystemJson, env}) {
    struct stat st {};
    if (!path || ::stat(path, &st) != 0) {
      sig += "none\n";
      continue;
    }
    sig += std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
           std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec) + "\n";
  }
  return sig;
}

struct Loaded {
  std::mutex mu;
  std::string signature;       // guarded by mu
  std::optional<Config> cfg;   // guarded by mu
};

Loaded &Cache() {
  static Loaded *cache = [] {
    auto *c = new Loaded;  // never destroyed: used until exit
    // A child of fork() has only the forking thread; another may have held
    // the lock (copying a Config), so the child starts with a fresh one.
    pthread_atfork(nullptr, nullptr, [] { new (&Cache().mu) std::mutex(); });
    return c;
  }();
  return *cache;
}

}  // namespace

Config LoadConfig() {
  ConfigLoadScope scope;  // the log holds this thread's lines until it knows its level
  Config cfg;
  const char *system = GetEnv("UFILE_SYSTEM_JSON_PATH");
  LoadJsonFile(cfg, system ? system : kDefaultSystemJson, ConfigSource::kSystemJson, false);
  DropVendorGeometryDefaults(cfg);
  if (const char *path = GetEnv("CUFILE_ENV_PATH_JSON"))
    LoadJsonFile(cfg, path, ConfigSource::kEnvJson, true);
  ApplyEnvironment(cfg);
  scope.Loaded(cfg);
  return cfg;
}

Config LoadConfigOnce() {
  Loaded &c = Cache();
  std::string sig = InputsSignature();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.cfg && c.signature == sig) return *c.cfg;
  }
  Config cfg = LoadConfig();  // outside the lock: it logs, and the log may load too
  std::lock_guard<std::mutex> lock(c.mu);
  c.signature = std::move(sig);
  c.cfg = cfg;
  return cfg;
}

void ForgetLoadedConfig() {
  Loaded &c = Cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.cfg.reset();
  c.signature.clear();
}

}  // namespace ufile
