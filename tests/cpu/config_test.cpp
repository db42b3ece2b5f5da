// SPDX-License-Identifier: Apache-2.0
// base/config: cufile.json parsing (comments, every key of NVIDIA's file,
// bad values, unknown keys, missing and malformed files), the environment
// overrides, and the precedence of all layers with the source of each value.
#include "base/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/params.h"
#include "support/test_util.h"

namespace ufile {
namespace {

using test::ScopedEnv;
using test::TempDir;
using test::WriteTextFile;

std::vector<std::string> ReadLines(const std::string &path) {
  std::vector<std::string> lines;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

// Lines of the log at `level` ("ERROR", ...) that contain `needle`.
size_t CountLines(const std::vector<std::string> &lines, const std::string &level,
                  const std::string &needle = "") {
  return std::count_if(lines.begin(), lines.end(), [&](const std::string &l) {
    return l.find(" " + level + " ") != std::string::npos && l.find(needle) != std::string::npos;
  });
}

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Every configuration input cleared, the log sent to a file of the test.
class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() { CaptureLog("test.log"); }
  ~ConfigTest() override {
    Config quiet;
    quiet.log_file_path = "/dev/null";
    ConfigureLog(quiet);
  }

  // Starts a fresh log file; returns its path.
  std::string CaptureLog(const std::string &name) {
    log_path_ = dir_.File(name);
    Config cfg;
    cfg.log_level = LogLevel::kDebug;
    cfg.log_file_path = log_path_;
    ConfigureLog(cfg);
    return log_path_;
  }
  std::vector<std::string> Log() const { return ReadLines(log_path_); }

  TempDir dir_;
  std::string log_path_;
  ScopedEnv system_{"UFILE_SYSTEM_JSON_PATH", dir_.File("no-system.json")};
  ScopedEnv env_json_{"CUFILE_ENV_PATH_JSON", std::nullopt};
  ScopedEnv level_{"CUFILE_LOGGING_LEVEL", std::nullopt};
  ScopedEnv logfile_{"CUFILE_LOGFILE_PATH", std::nullopt};
  ScopedEnv force_{"CUFILE_FORCE_COMPAT_MODE", std::nullopt};
  ScopedEnv allow_{"CUFILE_ALLOW_COMPAT_MODE", std::nullopt};
  ScopedEnv p2p_{"CUFILE_USE_PCIP2PDMA", std::nullopt};
  ScopedEnv topo_{"CUFILE_SKIP_TOPOLOGY_DETECTION", std::nullopt};
  ScopedEnv engine_{"UFILE_ENGINE", std::nullopt};
};

// Our own file with every key of NVIDIA's shipped cufile.json (CUDA 13.0),
// the extra properties ufile reads, and ufile's section; values differ from
// the defaults so that each one is seen to apply.
const char kEveryKey[] = R"({
  // line comment
  "logging": { "dir": "/var/log/ufile", "level": "INFO" },
  "profile": { "nvtx": true, "cufile_stats": 2 },
  /* block
     comment */
  "execution": { "max_io_queue_depth": 64, "max_io_threads": 4, "parallel_io": false,
                 "min_io_threshold_size_kb": 8192, "max_request_parallelism": 4 },
  "properties": {
    "max_direct_io_size_kb": 8192, "max_device_cache_size_kb": 262144,
    "per_buffer_cache_size_kb": 2048, "max_device_pinned_mem_size_kb": 16777216,
    "posix_pool_slab_size_kb": [4, 1024, 16384], "posix_pool_slab_count": [256, 32, 8],
    "use_poll_mode": true, "poll_mode_max_size_kb": 8, "use_pci_p2pdma": true,
    "allow_compat_mode": false, "gds_rdma_write_support": false, "io_batchsize": 256,
    "io_priority": "high", "rdma_dev_addr_list": ["10.0.0.1"],
    "rdma_load_balancing_policy": "RoundRobin", "rdma_dc_key": "0xffeeddcc",
    "rdma_access_mask": "0x1f", "rdma_dynamic_routing": false,
    "rdma_dynamic_routing_order": ["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"],
    "force_compat_mode": true, "allow_system_memory": false, "batch_io_timeout_msecs": 5000,
    "prefer_io_uring": false, "force_odirect_mode": true, "skip_topology_detection": true,
    "stream_memops_bypass": true
  },
  "fs": {
    "generic": { "posix_unaligned_writes": true },
    "beegfs": { "posix_gds_min_kb": 0, "rdma_dev_addr_list": [],
                "mount_table": { "/beegfs/a": { "rdma_dev_addr_list": ["172.16.0.1"] } } },
    "lustre": { "posix_gds_min_kb": 0, "rdma_dev_addr_list": [],
                "mount_table": { "/lustre/a": { "rdma_dev_addr_list": [] } } },
    "nfs": { "rdma_dev_addr_list": [], "mount_table": { "/mnt/nfs": {} } },
    "gpfs": { "gds_write_support": false, "gds_async_support": true, "rdma_dev_addr_list": [],
              "mount_table": {} },
    "weka": { "rdma_write_support": false }
  },
  "denylist": { "drivers": [], "devices": ["/dev/nvme9n1"], "mounts": [], "filesystems": [] },
  "miscellaneous": { "api_check_aggressive": true },
  "ufile": { "engine": "thread_pool" }
})";

// The keys of kEveryKey that are inert: those that need nvidia-fs, and
// those whose mechanism ufile does not have (docs/CONFIG.md says why).
const std::vector<std::string> kInertKeys = {"properties.max_device_cache_size_kb",
                                             "properties.per_buffer_cache_size_kb",
                                             "properties.use_poll_mode",
                                             "properties.poll_mode_max_size_kb",
                                             "properties.skip_topology_detection",
                                             "fs.generic.posix_unaligned_writes",
                                             "miscellaneous.api_check_aggressive",
                                             "properties.use_pci_p2pdma",
                                             "properties.gds_rdma_write_support",
                                             "properties.io_priority",
                                             "properties.rdma_dev_addr_list",
                                             "properties.rdma_load_balancing_policy",
                                             "properties.rdma_dc_key",
                                             "properties.rdma_access_mask",
                                             "properties.rdma_dynamic_routing",
                                             "properties.rdma_dynamic_routing_order",
                                             "fs.beegfs.posix_gds_min_kb",
                                             "fs.beegfs.rdma_dev_addr_list",
                                             "fs.beegfs.mount_table",
                                             "fs.lustre.posix_gds_min_kb",
                                             "fs.lustre.rdma_dev_addr_list",
                                             "fs.lustre.mount_table",
                                             "fs.nfs.rdma_dev_addr_list",
                                             "fs.nfs.mount_table",
                                             "fs.gpfs.gds_write_support",
                                             "fs.gpfs.gds_async_support",
                                             "fs.gpfs.rdma_dev_addr_list",
                                             "fs.gpfs.mount_table",
                                             "fs.weka.rdma_write_support",
                                             "denylist.drivers",
                                             "denylist.devices",
                                             "denylist.mounts",
                                             "denylist.filesystems"};

TEST_F(ConfigTest, EveryKeyOfNvidiasFileIsAccepted) {
  Config cfg;
  ASSERT_TRUE(ApplyJsonConfig(cfg, kEveryKey, ConfigSource::kSystemJson, "every.json"));
  std::vector<std::string> log = Log();
  EXPECT_EQ(CountLines(log, "ERROR"), 0u);
  EXPECT_EQ(CountLines(log, "WARN"), 0u);
  EXPECT_TRUE(cfg.unknown_keys.empty());
  EXPECT_EQ(Sorted(cfg.inert_keys), Sorted(kInertKeys));

  // A source for each key that set a field (32), none for inert-only keys.
  EXPECT_EQ(cfg.sources.size(), 32u);
  for (const auto &[key, source] : cfg.sources) EXPECT_EQ(source, ConfigSource::kSystemJson) << key;
  EXPECT_EQ(cfg.sources.count("properties.io_batchsize"), 1u);
  EXPECT_EQ(cfg.sources.count("properties.batch_io_timeout_msecs"), 1u);
  EXPECT_EQ(cfg.sources.count("properties.posix_pool_slab_count"), 1u);
  EXPECT_EQ(cfg.sources.count("fs.weka.rdma_write_support"), 0u);
}

TEST_F(ConfigTest, EveryKeyOfNvidiasFileAppliesItsValue) {
  Config cfg;
  ASSERT_TRUE(ApplyJsonConfig(cfg, kEveryKey, ConfigSource::kSystemJson, "every.json"));
  EXPECT_EQ(cfg.log_dir, "/var/log/ufile");
  EXPECT_EQ(cfg.log_level, LogLevel::kInfo);
  EXPECT_TRUE(cfg.nvtx);
  EXPECT_EQ(cfg.stats_level, 2u);
  EXPECT_EQ(cfg.max_io_queue_depth, 64u);
  EXPECT_EQ(cfg.max_io_threads, 4u);
  EXPECT_FALSE(cfg.parallel_io);
  EXPECT_EQ(cfg.min_io_threshold_size_kb, 8192u);
  EXPECT_EQ(cfg.max_request_parallelism, 4u);
  EXPECT_EQ(cfg.max_direct_io_size_kb, 8192u);
  EXPECT_EQ(cfg.max_device_cache_size_kb, 262144u);
  EXPECT_EQ(cfg.per_buffer_cache_size_kb, 2048u);
  EXPECT_EQ(cfg.max_device_pinned_mem_size_kb, 16777216u);
  EXPECT_EQ(cfg.posix_pool_slab_size_kb, (std::vector<size_t>{4, 1024, 16384}));
  EXPECT_EQ(cfg.posix_pool_slab_count, (std::vector<size_t>{256, 32, 8}));
  EXPECT_TRUE(cfg.use_poll_mode);
  EXPECT_EQ(cfg.poll_mode_max_size_kb, 8u);
  EXPECT_TRUE(cfg.use_pci_p2pdma);
  EXPECT_FALSE(cfg.allow_compat_mode);
  EXPECT_TRUE(cfg.force_compat_mode);
  EXPECT_FALSE(cfg.allow_system_memory);
  EXPECT_FALSE(cfg.gds_rdma_write_support);
  EXPECT_EQ(cfg.io_batchsize, 256u);
  EXPECT_EQ(cfg.batch_io_timeout_ms, 5000u);
  EXPECT_EQ(cfg.io_priority, "high");
  EXPECT_FALSE(cfg.prefer_io_uring);
  EXPECT_TRUE(cfg.force_odirect_mode);
  EXPECT_TRUE(cfg.skip_topology_detection);
  EXPECT_TRUE(cfg.stream_memops_bypass);
  EXPECT_TRUE(cfg.api_check_aggressive);
  EXPECT_TRUE(cfg.posix_unaligned_writes);
  EXPECT_EQ(cfg.engine, EngineKind::kThreadPool);
}

TEST_F(ConfigTest, CommentsAreAllowed) {
  Config cfg;
  ASSERT_TRUE(ApplyJsonConfig(cfg,
                              "// head\n{ /* a */ \"properties\": { // b\n"
                              "\"io_batchsize\": 32 /* c */ } }\n// tail\n",
                              ConfigSource::kEnvJson, "comments.json"));
  EXPECT_EQ(cfg.io_batchsize, 32u);
  EXPECT_EQ(cfg.sources.at("properties.io_batchsize"), ConfigSource::kEnvJson);
}

struct BadCase {
  const char *json;
  const char *key;  // the dotted key the ERROR line must name
  std::function<bool(const Config &)> unchanged;
};

bool SlabsDefault(const Config &c) {
  Config d;
  return c.posix_pool_slab_size_kb == d.posix_pool_slab_size_kb &&
         c.posix_pool_slab_count == d.posix_pool_slab_count;
}

TEST_F(ConfigTest, BadValuesNameTheKeyAndKeepTheLowerLayer) {
  const BadCase cases[] = {
      {R"({"execution":{"max_io_threads":"four"}})", "execution.max_io_threads",
       [](const Config &c) { return c.max_io_threads == 0; }},
      {R"({"execution":{"max_io_queue_depth":true}})", "execution.max_io_queue_depth",
       [](const Config &c) { return c.max_io_queue_depth == 128; }},
      // The range of the engine's rings: 4 to 4096 entries.
      {R"({"execution":{"max_io_queue_depth":3}})", "execution.max_io_queue_depth",
       [](const Config &c) { return c.max_io_queue_depth == 128; }},
      {R"({"execution":{"max_io_queue_depth":4097}})", "execution.max_io_queue_depth",
       [](const Config &c) { return c.max_io_queue_depth == 128; }},
      {R"({"properties":{"max_direct_io_size_kb":-4}})", "properties.max_direct_io_size_kb",
       [](const Config &c) { return c.max_direct_io_size_kb == 16384; }},
      {R"({"properties":{"max_direct_io_size_kb":4098}})", "properties.max_direct_io_size_kb",
       [](const Config &c) { return c.max_direct_io_size_kb == 16384; }},
      {R"({"profile":{"cufile_stats":7}})", "profile.cufile_stats",
       [](const Config &c) { return c.stats_level == 0; }},
      {R"({"properties":{"io_batchsize":0}})", "properties.io_batchsize",
       [](const Config &c) { return c.io_batchsize == 128; }},
      {R"({"properties":{"io_batchsize":1.5}})", "properties.io_batchsize",
       [](const Config &c) { return c.io_batchsize == 128; }},
      {R"({"properties":{"use_poll_mode":"yes"}})", "properties.use_poll_mode",
       [](const Config &c) { return !c.use_poll_mode; }},
      {R"({"logging":{"level":"LOUD"}})", "logging.level",
       [](const Config &c) { return c.log_level == LogLevel::kError; }},
      {R"({"logging":{"dir":42}})", "logging.dir",
       [](const Config &c) { return c.log_dir.empty(); }},
      {R"({"ufile":{"engine":"spdk"}})", "ufile.engine",
       [](const Config &c) { return c.engine == EngineKind::kAuto; }},
      {R"({"properties":{"io_priority":"urgent"}})", "properties.io_priority",
       [](const Config &c) { return c.io_priority == "default"; }},
      {R"({"properties":{"posix_pool_slab_size_kb":[4,1024],"posix_pool_slab_count":[1,2,3]}})",
       "properties.posix_pool_slab_count", SlabsDefault},
      {R"({"properties":{"posix_pool_slab_size_kb":[4,6,8],"posix_pool_slab_count":[1,2,3]}})",
       "properties.posix_pool_slab_size_kb", SlabsDefault},
      {R"({"properties":{"posix_pool_slab_size_kb":[4,8,12],"posix_pool_slab_count":[1,0,3]}})",
       "properties.posix_pool_slab_count", SlabsDefault},
      {R"({"properties":{"posix_pool_slab_count":[1,2]}})", "properties.posix_pool_slab_count",
       SlabsDefault},
      {R"({"properties":{"posix_pool_slab_size_kb":"big"}})", "properties.posix_pool_slab_size_kb",
       SlabsDefault},
      {R"({"properties":5})", "properties",
       [](const Config &c) { return c.io_batchsize == 128 && c.sources.empty(); }},
  };
  int n = 0;
  for (const BadCase &bad : cases) {
    SCOPED_TRACE(bad.json);
    CaptureLog("bad" + std::to_string(n++) + ".log");
    Config cfg;
    ASSERT_TRUE(ApplyJsonConfig(cfg, bad.json, ConfigSource::kEnvJson, "bad.json"));
    EXPECT_TRUE(bad.unchanged(cfg));
    EXPECT_TRUE(cfg.sources.empty());
    std::vector<std::string> log = Log();
    EXPECT_EQ(CountLines(log, "ERROR"), 1u);
    EXPECT_EQ(CountLines(log, "ERROR", std::string(bad.key)), 1u);
    EXPECT_EQ(CountLines(log, "ERROR", "bad.json"), 1u);
  }
}

TEST_F(ConfigTest, GoodKeysBesideABadOneStillApply) {
  Config cfg;
  ApplyJsonConfig(cfg, R"({"execution":{"max_io_threads":"four","max_io_queue_depth":64}})",
                  ConfigSource::kEnvJson, "mixed.json");
  EXPECT_EQ(cfg.max_io_queue_depth, 64u);
  EXPECT_EQ(cfg.max_io_threads, 0u);
  EXPECT_EQ(cfg.sources.size(), 1u);
}

TEST_F(ConfigTest, OneSlabArrayAppliesWhenItsLengthMatches) {
  Config cfg;
  ASSERT_TRUE(ApplyJsonConfig(cfg, R"({"properties":{"posix_pool_slab_count":[1,2,3]}})",
                              ConfigSource::kEnvJson, "slabs.json"));
  EXPECT_EQ(cfg.posix_pool_slab_count, (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(cfg.posix_pool_slab_size_kb, (std::vector<size_t>{4, 1024, 4096}));
  EXPECT_EQ(cfg.sources.count("properties.posix_pool_slab_count"), 1u);
  EXPECT_EQ(cfg.sources.count("properties.posix_pool_slab_size_kb"), 0u);
}

TEST_F(ConfigTest, UnknownKeysWarnAndAreRecorded) {
  Config cfg;
  ASSERT_TRUE(ApplyJsonConfig(
      cfg, R"({"bogus":1,"properties":{"foo":true,"io_batchsize":64},"fs":{"zfs":{}}})",
      ConfigSource::kSystemJson, "unknown.json"));
  EXPECT_EQ(Sorted(cfg.unknown_keys), Sorted({"bogus", "properties.foo", "fs.zfs"}));
  EXPECT_EQ(cfg.io_batchsize, 64u);
  std::vector<std::string> log = Log();
  EXPECT_EQ(CountLines(log, "WARN"), 3u);
  EXPECT_EQ(CountLines(log, "WARN", "properties.foo"), 1u);
  EXPECT_EQ(CountLines(log, "WARN", "fs.zfs"), 1u);
  EXPECT_EQ(CountLines(log, "ERROR"), 0u);
}

TEST_F(ConfigTest, MalformedTextLeavesConfigUnchanged) {
  int n = 0;
  for (const char *text : {"{\"properties\": {", "[1, 2]", "", "\"io_batchsize\""}) {
    SCOPED_TRACE(text);
    CaptureLog("malformed" + std::to_string(n++) + ".log");
    Config cfg;
    cfg.io_batchsize = 7;
    EXPECT_FALSE(ApplyJsonConfig(cfg, text, ConfigSource::kEnvJson, "broken.json"));
    EXPECT_EQ(cfg.io_batchsize, 7u);
    EXPECT_TRUE(cfg.sources.empty());
    EXPECT_EQ(CountLines(Log(), "ERROR", "broken.json"), 1u);
  }
}

TEST_F(ConfigTest, MalformedEnvFileIsIgnoredWhole) {
  WriteTextFile(dir_.File("system.json"), R"({"properties":{"io_batchsize":64}})");
  WriteTextFile(dir_.File("env.json"), R"({"properties":{"io_batchsize":32, }} oops)");
  ScopedEnv system("UFILE_SYSTEM_JSON_PATH", dir_.File("system.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("env.json"));
  Config cfg = LoadConfig();
  EXPECT_EQ(cfg.io_batchsize, 64u);
  EXPECT_EQ(cfg.sources.at("properties.io_batchsize"), ConfigSource::kSystemJson);
  EXPECT_EQ(CountLines(Log(), "ERROR", dir_.File("env.json")), 1u);
}

TEST_F(ConfigTest, MissingSystemFileIsSilent) {
  Config cfg = LoadConfig();
  EXPECT_TRUE(cfg.sources.empty());
  EXPECT_TRUE(cfg.inert_keys.empty());
  EXPECT_TRUE(cfg.unknown_keys.empty());
  std::vector<std::string> log = Log();
  EXPECT_EQ(CountLines(log, "ERROR"), 0u);
  EXPECT_EQ(CountLines(log, "DEBUG", dir_.File("no-system.json")), 1u);
}

TEST_F(ConfigTest, MissingOrUnreadableEnvFileIsAnError) {
  int n = 0;
  for (const std::string &path : {dir_.File("absent.json"), dir_.path()}) {
    SCOPED_TRACE(path);
    CaptureLog("env" + std::to_string(n++) + ".log");
    ScopedEnv env("CUFILE_ENV_PATH_JSON", path);
    Config cfg = LoadConfig();
    EXPECT_TRUE(cfg.sources.empty());
    EXPECT_EQ(CountLines(Log(), "ERROR", path), 1u);
  }
}

TEST_F(ConfigTest, LayersApplyInOrderAndRecordTheirSource) {
  WriteTextFile(dir_.File("system.json"), R"({
    "execution": {"max_io_queue_depth": 16},
    "properties": {"io_batchsize": 16, "allow_compat_mode": false},
    "logging": {"level": "WARN"}})");
  WriteTextFile(dir_.File("env.json"), R"({
    "properties": {"io_batchsize": 32, "allow_compat_mode": false},
    "logging": {"level": "INFO"}})");
  ScopedEnv system("UFILE_SYSTEM_JSON_PATH", dir_.File("system.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("env.json"));
  ScopedEnv allow("CUFILE_ALLOW_COMPAT_MODE", "true");
  ScopedEnv level("CUFILE_LOGGING_LEVEL", "DEBUG");

  Config cfg = LoadConfig();
  EXPECT_EQ(cfg.max_io_queue_depth, 16u);  // system file only
  EXPECT_EQ(cfg.sources.at("execution.max_io_queue_depth"), ConfigSource::kSystemJson);
  EXPECT_EQ(cfg.io_batchsize, 32u);  // env file over system file
  EXPECT_EQ(cfg.sources.at("properties.io_batchsize"), ConfigSource::kEnvJson);
  EXPECT_TRUE(cfg.allow_compat_mode);  // environment over both files
  EXPECT_EQ(cfg.sources.at("properties.allow_compat_mode"), ConfigSource::kEnvironment);
  EXPECT_EQ(cfg.log_level, LogLevel::kDebug);
  EXPECT_EQ(cfg.sources.at("logging.level"), ConfigSource::kEnvironment);
  EXPECT_EQ(cfg.sources.count("properties.max_direct_io_size_kb"), 0u);  // default
  EXPECT_EQ(cfg.max_direct_io_size_kb, 16384u);

  // The API layer goes on top of all of them.
  ASSERT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "TRACE").err, CU_FILE_SUCCESS);
  ApplyStagedParams(cfg, /*clear=*/true);
  EXPECT_EQ(cfg.log_level, LogLevel::kTrace);
  EXPECT_EQ(cfg.sources.at("logging.level"), ConfigSource::kApi);
  EXPECT_EQ(cfg.io_batchsize, 32u);
}

TEST_F(ConfigTest, EnvironmentOverrides) {
  ScopedEnv level("CUFILE_LOGGING_LEVEL", "trace");
  ScopedEnv file("CUFILE_LOGFILE_PATH", "/tmp/ufile-x.log");
  ScopedEnv force("CUFILE_FORCE_COMPAT_MODE", "TRUE");
  ScopedEnv allow("CUFILE_ALLOW_COMPAT_MODE", "0");
  ScopedEnv p2p("CUFILE_USE_PCIP2PDMA", "yes");
  ScopedEnv topo("CUFILE_SKIP_TOPOLOGY_DETECTION", "on");
  ScopedEnv engine("UFILE_ENGINE", "io_uring");
  Config cfg;
  ApplyEnvironment(cfg);
  EXPECT_EQ(cfg.log_level, LogLevel::kTrace);
  EXPECT_EQ(cfg.log_file_path, "/tmp/ufile-x.log");
  EXPECT_TRUE(cfg.force_compat_mode);
  EXPECT_FALSE(cfg.allow_compat_mode);
  EXPECT_TRUE(cfg.use_pci_p2pdma);
  EXPECT_TRUE(cfg.skip_topology_detection);
  EXPECT_EQ(cfg.engine, EngineKind::kIoUring);
  EXPECT_EQ(cfg.sources.size(), 7u);
  for (const char *key : {"logging.level", "logging.file_path", "properties.force_compat_mode",
                          "properties.allow_compat_mode", "properties.use_pci_p2pdma",
                          "properties.skip_topology_detection", "ufile.engine"})
    EXPECT_EQ(cfg.sources.at(key), ConfigSource::kEnvironment) << key;
}

TEST_F(ConfigTest, BadEnvironmentValuesAreIgnoredWithAnError) {
  ScopedEnv level("CUFILE_LOGGING_LEVEL", "LOUD");
  ScopedEnv force("CUFILE_FORCE_COMPAT_MODE", "maybe");
  ScopedEnv engine("UFILE_ENGINE", "spdk");
  Config cfg;
  ApplyEnvironment(cfg);
  EXPECT_EQ(cfg.log_level, LogLevel::kError);
  EXPECT_FALSE(cfg.force_compat_mode);
  EXPECT_EQ(cfg.engine, EngineKind::kAuto);
  EXPECT_TRUE(cfg.sources.empty());
  std::vector<std::string> log = Log();
  EXPECT_EQ(CountLines(log, "ERROR"), 3u);
  EXPECT_EQ(CountLines(log, "ERROR", "CUFILE_LOGGING_LEVEL=LOUD"), 1u);
  EXPECT_EQ(CountLines(log, "ERROR", "CUFILE_FORCE_COMPAT_MODE=maybe"), 1u);
  EXPECT_EQ(CountLines(log, "ERROR", "UFILE_ENGINE=spdk"), 1u);
}

TEST(ConfigNames, LevelsAndSources) {
  const char *names[] = {"NOTICE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
  for (int i = 0; i < 6; ++i) {
    LogLevel level = LogLevel::kTrace;
    EXPECT_STREQ(LogLevelName(static_cast<LogLevel>(i)), names[i]);
    ASSERT_TRUE(ParseLogLevel(names[i], &level));
    EXPECT_EQ(static_cast<int>(level), i);
  }
  LogLevel level = LogLevel::kNotice;
  EXPECT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_TRUE(ParseLogLevel("Warning", &level));
  EXPECT_EQ(level, LogLevel::kWarn);
  for (const char *bad : {"", "7", "LOUD", "ERRORS"}) EXPECT_FALSE(ParseLogLevel(bad, &level));
  EXPECT_EQ(level, LogLevel::kWarn);

  EXPECT_STREQ(ConfigSourceName(ConfigSource::kDefault), "default");
  EXPECT_STREQ(ConfigSourceName(ConfigSource::kSystemJson), "system_json");
  EXPECT_STREQ(ConfigSourceName(ConfigSource::kEnvJson), "env_json");
  EXPECT_STREQ(ConfigSourceName(ConfigSource::kEnvironment), "environment");
  EXPECT_STREQ(ConfigSourceName(ConfigSource::kApi), "api");
}

}  // namespace
}  // namespace ufile
