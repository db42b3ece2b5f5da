// SPDX-License-Identifier: Apache-2.0
// Config: every setting ufile reads, with where each value came from.
// Precedence, lowest to highest: built-in defaults < /etc/cufile.json <
// the file named by CUFILE_ENV_PATH_JSON < environment overrides <
// values staged with cuFileSetParameter* before the driver opens.
// Loading never fails: a bad file, key or value is logged (naming the key)
// and the lower layer's value stays.
// Each key's JSON name, cuFile parameter, range and environment variable
// are in one table, base/config_keys.h.
// Thread-safety: a Config is a value; the driver keeps one immutable copy
// while open.
#pragma once

#include <cufile.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace ufile {

enum class LogLevel { kNotice = 0, kError, kWarn, kInfo, kDebug, kTrace };

// Where a setting's value came from (reported by ufile-check).
enum class ConfigSource { kDefault, kSystemJson, kEnvJson, kEnvironment, kApi };

// Which engine moves bytes between files and host memory.
enum class EngineKind { kAuto, kIoUring, kThreadPool };

// execution.max_io_queue_depth: the entries of each I/O thread's io_uring
// ring. 4096 entries take about 400 KiB a ring (locked memory before Linux
// 5.12). The key refuses values outside this range; the engine clamps to it
// (a Config built in code may hold any value).
constexpr size_t kMinIoQueueDepth = 4;
constexpr size_t kMaxIoQueueDepth = 4096;

struct Config {
  // logging
  LogLevel log_level = LogLevel::kError;
  std::string log_dir;        // logging.dir; empty: current directory
  std::string log_file_path;  // CUFILE_LOGFILE_PATH; overrides log_dir
  // profile
  bool nvtx = false;
  size_t stats_level = 0;  // profile.cufile_stats, 0..3
  // execution
  size_t max_io_queue_depth = 128;
  size_t max_io_threads = 0;  // 0: sized from the machine at open
  bool parallel_io = true;
  size_t min_io_threshold_size_kb = 1024;
  size_t max_request_parallelism = 0;  // 0: sized from the machine at open
  // properties
  size_t max_direct_io_size_kb = 16384;
  size_t max_device_cache_size_kb = 131072;
  size_t per_buffer_cache_size_kb = 1024;
  size_t max_device_pinned_mem_size_kb = 33554432;
  std::vector<size_t> posix_pool_slab_size_kb = {4, 1024, 4096};
  std::vector<size_t> posix_pool_slab_count = {128, 64, 64};
  bool use_poll_mode = false;
  size_t poll_mode_max_size_kb = 4;
  bool use_pci_p2pdma = false;
  bool allow_compat_mode = true;
  bool force_compat_mode = false;
  bool allow_system_memory = true;
  bool gds_rdma_write_support = true;
  size_t io_batchsize = 128;
  size_t batch_io_timeout_ms = 0;
  std::string io_priority = "default";
  bool prefer_io_uring = true;
  bool force_odirect_mode = false;
  bool skip_topology_detection = false;
  bool stream_memops_bypass = false;
  bool api_check_aggressive = false;  // miscellaneous.api_check_aggressive
  bool posix_unaligned_writes = false;  // fs.generic.posix_unaligned_writes
  // ufile's own (section "ufile")
  EngineKind engine = EngineKind::kAuto;
  // io_uring moves staging-buffer transfers as registered buffers
  // (engine/ring_registry.h); false: every transfer pins its pages itself.
  bool io_uring_fixed_buffers = true;
  // io_uring reaches registered handles' descriptors as registered files,
  // sparing each request a reference to the file. Off by default: that
  // saving matters at millions of requests a second on one file; each of
  // ufile's requests costs far more (a copy to or from the GPU and its
  // wait), and its read rows measured no gain (docs/CONFIG.md).
  bool io_uring_fixed_files = false;
  // O_DIRECT reads take page-cache-resident chunks from the page cache
  // (core/chunk_io.h); false: every aligned chunk goes through O_DIRECT.
  bool page_cache_reads = true;
  // With a CUDA context current at open, open pins staging buffers and
  // creates copy lanes (core/runtime.cpp); false: on first use.
  bool prepare_at_open = true;

  // Dotted JSON key ("properties.io_batchsize") -> where its value came from.
  // Keys absent from the map are at their defaults.
  std::map<std::string, ConfigSource> sources;
  // Inert keys read from a JSON file (accepted, reported by ufile-check with
  // the reason they have no effect) and unknown keys (warned about).
  std::vector<std::string> inert_keys;
  std::vector<std::string> unknown_keys;
  // Pipeline-geometry keys whose system-file value was NVIDIA's shipped
  // default and so was treated as unset (base/config_vendor.cpp).
  std::vector<std::string> vendor_defaults_ignored;
};

// Applies one JSON document (text with // comments) on top of cfg, recording
// source for each key it sets. Returns false if the text is not JSON (cfg is
// then unchanged); bad keys and types are logged and skipped.
bool ApplyJsonConfig(Config &cfg, const std::string &text, ConfigSource source,
                     const std::string &origin);

// Applies the environment overrides (CUFILE_LOGGING_LEVEL,
// CUFILE_LOGFILE_PATH, UFILE_ENGINE, ...).
void ApplyEnvironment(Config &cfg);

// defaults < /etc/cufile.json < $CUFILE_ENV_PATH_JSON < environment. The
// staged API values are applied by the caller (base/params). Reads and
// parses every time (base/config_load.cpp).
Config LoadConfig();
// The same, kept while the files and environment variables it reads are
// unchanged, until ForgetLoadedConfig (each driver open calls it once it has
// its Config): getters before open, the log and the open parse once.
Config LoadConfigOnce();
void ForgetLoadedConfig();

// After the system file: NVIDIA's shipped values of the pipeline-geometry
// keys count as unset (see base/config_vendor.cpp for why).
void DropVendorGeometryDefaults(Config &cfg);

// Names as configuration files and ufile-check spell them (base/config_names.cpp).
// The parsers take any case; ParseLogLevel also takes WARNING for WARN.
const char *LogLevelName(LogLevel level);
bool ParseLogLevel(const std::string &text, LogLevel *level);
const char *ConfigSourceName(ConfigSource source);
const char *EngineKindName(EngineKind engine);
bool ParseEngineKind(const std::string &text, EngineKind *engine);
// An environment variable's boolean: true/1/yes/on or false/0/no/off.
bool ParseBool(const std::string &text, bool *value);

}  // namespace ufile
