// SPDX-License-Identifier: Apache-2.0
// cuFileGetParameter* / cuFileSetParameter*: every parameter's default,
// round trip before open, range (cuFileGetParameterMinMaxValue), refusals
// (out of range, unknown enum, NULL), slab arrays, the staged layer over the
// environment, and the behaviour around cuFileDriverOpen/Close.
#include "base/params.h"

#include <cufile.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "support/test_util.h"

namespace ufile {
namespace {

using test::ScopedEnv;
using test::TempDir;

constexpr CUfileOpError kOk = CU_FILE_SUCCESS;
constexpr CUfileOpError kInvalid = CU_FILE_INVALID_VALUE;

struct SizeCase {
  CUFileSizeTConfigParameter_t param;
  const char *key;
  size_t def, min, max, step, sample;
};

// The documented values (docs/CONFIG.md), written out here apart from the key
// table (base/config_keys.cpp), so that a wrong row there fails.
const SizeCase kSizes[] = {
    {CUFILE_PARAM_PROFILE_STATS, "profile.cufile_stats", 0, 0, 3, 1, 2},
    {CUFILE_PARAM_EXECUTION_MAX_IO_QUEUE_DEPTH, "execution.max_io_queue_depth", 128, 4, 4096, 1,
     64},
    {CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, "execution.max_io_threads", 0, 0, 256, 1, 8},
    {CUFILE_PARAM_EXECUTION_MIN_IO_THRESHOLD_SIZE_KB, "execution.min_io_threshold_size_kb", 1024, 4,
     1 << 20, 4, 8192},
    {CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, "execution.max_request_parallelism", 0, 0, 256,
     1, 4},
    {CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, "properties.max_direct_io_size_kb", 16384, 4,
     1 << 20, 4, 4096},
    {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_CACHE_SIZE_KB, "properties.max_device_cache_size_kb",
     131072, 4, 1 << 30, 4, 262144},
    {CUFILE_PARAM_PROPERTIES_PER_BUFFER_CACHE_SIZE_KB, "properties.per_buffer_cache_size_kb", 1024,
     4, 1 << 20, 4, 2048},
    {CUFILE_PARAM_PROPERTIES_MAX_DEVICE_PINNED_MEM_SIZE_KB,
     "properties.max_device_pinned_mem_size_kb", 33554432, 4, size_t{1} << 31, 4, 1048576},
    {CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, "properties.io_batchsize", 128, 1, 4096, 1, 256},
    {CUFILE_PARAM_POLLTHRESHOLD_SIZE_KB, "properties.poll_mode_max_size_kb", 4, 4, 1 << 20, 4, 64},
    {CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS, "properties.batch_io_timeout_msecs", 0, 0,
     3600000, 1, 1500},
};

struct BoolCase {
  CUFileBoolConfigParameter_t param;
  const char *key;
  bool def;
};

const BoolCase kBools[] = {
    {CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, "properties.use_poll_mode", false},
    {CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, "properties.allow_compat_mode", true},
    {CUFILE_PARAM_FORCE_COMPAT_MODE, "properties.force_compat_mode", false},
    {CUFILE_PARAM_FS_MISC_API_CHECK_AGGRESSIVE, "miscellaneous.api_check_aggressive", false},
    {CUFILE_PARAM_EXECUTION_PARALLEL_IO, "execution.parallel_io", true},
    {CUFILE_PARAM_PROFILE_NVTX, "profile.nvtx", false},
    {CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY, "properties.allow_system_memory", true},
    {CUFILE_PARAM_USE_PCIP2PDMA, "properties.use_pci_p2pdma", false},
    {CUFILE_PARAM_PREFER_IO_URING, "properties.prefer_io_uring", true},
    {CUFILE_PARAM_FORCE_ODIRECT_MODE, "properties.force_odirect_mode", false},
    {CUFILE_PARAM_SKIP_TOPOLOGY_DETECTION, "properties.skip_topology_detection", false},
    {CUFILE_PARAM_STREAM_MEMOPS_BYPASS, "properties.stream_memops_bypass", false},
};

size_t GetSize(CUFileSizeTConfigParameter_t p) {
  size_t v = SIZE_MAX;
  EXPECT_EQ(cuFileGetParameterSizeT(p, &v).err, kOk);
  return v;
}

bool GetBool(CUFileBoolConfigParameter_t p) {
  bool v = false;
  EXPECT_EQ(cuFileGetParameterBool(p, &v).err, kOk);
  return v;
}

std::string GetString(CUFileStringConfigParameter_t p) {
  char buf[PATH_MAX + 1] = "unset";
  EXPECT_EQ(cuFileGetParameterString(p, buf, sizeof(buf)).err, kOk);
  return buf;
}

std::vector<std::string> ReadLines(const std::string &path) {
  std::vector<std::string> lines;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

// Configuration inputs cleared, nothing staged, the log in a file of the test
// (CUFILE_LOGFILE_PATH too, since the driver's open reconfigures the log).
class ParamsTest : public ::testing::Test {
 protected:
  ParamsTest() {
    Config cfg;
    cfg.log_file_path = log_path_;
    ConfigureLog(cfg);
    ClearStaged();
  }
  ~ParamsTest() override {
    ClearStaged();
    Config quiet;
    quiet.log_file_path = "/dev/null";
    ConfigureLog(quiet);
  }
  static void ClearStaged() {
    Config scratch;
    ApplyStagedParams(scratch, /*clear=*/true);
  }
  bool LogHas(const std::string &a, const std::string &b) const {
    for (const std::string &line : ReadLines(log_path_))
      if (line.find(" ERROR ") != std::string::npos && line.find(a) != std::string::npos &&
          line.find(b) != std::string::npos)
        return true;
    return false;
  }

  TempDir dir_;
  std::string log_path_ = dir_.File("cufile.log");
  ScopedEnv system_{"UFILE_SYSTEM_JSON_PATH", dir_.File("no-system.json")};
  ScopedEnv env_json_{"CUFILE_ENV_PATH_JSON", std::nullopt};
  ScopedEnv level_{"CUFILE_LOGGING_LEVEL", std::nullopt};
  ScopedEnv logfile_{"CUFILE_LOGFILE_PATH", log_path_};
  ScopedEnv force_{"CUFILE_FORCE_COMPAT_MODE", std::nullopt};
  ScopedEnv allow_{"CUFILE_ALLOW_COMPAT_MODE", std::nullopt};
  ScopedEnv p2p_{"CUFILE_USE_PCIP2PDMA", std::nullopt};
  ScopedEnv topo_{"CUFILE_SKIP_TOPOLOGY_DETECTION", std::nullopt};
  ScopedEnv engine_{"UFILE_ENGINE", std::nullopt};
};

TEST_F(ParamsTest, DefaultsBeforeOpen) {
  for (const SizeCase &c : kSizes) EXPECT_EQ(GetSize(c.param), c.def) << c.key;
  for (const BoolCase &c : kBools) EXPECT_EQ(GetBool(c.param), c.def) << c.key;
  EXPECT_EQ(GetString(CUFILE_PARAM_LOGGING_LEVEL), "ERROR");
  EXPECT_EQ(GetString(CUFILE_PARAM_ENV_LOGFILE_PATH), log_path_);  // from the environment
  EXPECT_EQ(GetString(CUFILE_PARAM_LOG_DIR), "");
}

TEST_F(ParamsTest, SizeTRoundTripsBeforeOpen) {
  for (const SizeCase &c : kSizes) {
    SCOPED_TRACE(c.key);
    for (size_t v : {c.sample, c.min, c.max}) {
      ASSERT_EQ(cuFileSetParameterSizeT(c.param, v).err, kOk) << v;
      EXPECT_EQ(GetSize(c.param), v);
    }
  }
}

TEST_F(ParamsTest, SizeTOutOfRangeIsRefused) {
  for (const SizeCase &c : kSizes) {
    SCOPED_TRACE(c.key);
    std::vector<size_t> bad = {c.max + 1, SIZE_MAX};
    if (c.min > 0) bad.push_back(c.min - 1);
    if (c.step > 1) bad.push_back(c.min + 1);
    for (size_t v : bad) EXPECT_EQ(cuFileSetParameterSizeT(c.param, v).err, kInvalid) << v;
    EXPECT_EQ(GetSize(c.param), c.def);
  }
  EXPECT_TRUE(LogHas("cuFileSetParameterSizeT", "properties.io_batchsize) = 4097"));
}

TEST_F(ParamsTest, MinMaxValues) {
  for (const SizeCase &c : kSizes) {
    size_t lo = 99, hi = 99;
    ASSERT_EQ(cuFileGetParameterMinMaxValue(c.param, &lo, &hi).err, kOk) << c.key;
    EXPECT_EQ(lo, c.min) << c.key;
    EXPECT_EQ(hi, c.max) << c.key;
    EXPECT_GE(c.def, c.min) << c.key;
    EXPECT_LE(c.def, c.max) << c.key;
  }
  size_t lo = 0, hi = 0;
  auto unknown = static_cast<CUFileSizeTConfigParameter_t>(12);
  EXPECT_EQ(cuFileGetParameterMinMaxValue(unknown, &lo, &hi).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, nullptr, &hi).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &lo, nullptr).err, kInvalid);
}

TEST_F(ParamsTest, UnknownEnumsAndNullPointersAreRefused) {
  size_t size = 0;
  bool flag = false;
  char buf[64];
  for (int raw : {12, 1000, -1}) {
    auto p = static_cast<CUFileSizeTConfigParameter_t>(raw);
    EXPECT_EQ(cuFileGetParameterSizeT(p, &size).err, kInvalid) << raw;
    EXPECT_EQ(cuFileSetParameterSizeT(p, 1).err, kInvalid) << raw;
  }
  for (int raw : {12, 1000, -1}) {
    auto p = static_cast<CUFileBoolConfigParameter_t>(raw);
    EXPECT_EQ(cuFileGetParameterBool(p, &flag).err, kInvalid) << raw;
    EXPECT_EQ(cuFileSetParameterBool(p, true).err, kInvalid) << raw;
  }
  for (int raw : {3, 1000, -1}) {
    auto p = static_cast<CUFileStringConfigParameter_t>(raw);
    EXPECT_EQ(cuFileGetParameterString(p, buf, sizeof(buf)).err, kInvalid) << raw;
    EXPECT_EQ(cuFileSetParameterString(p, "x").err, kInvalid) << raw;
  }
  EXPECT_EQ(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, nullptr).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterBool(CUFILE_PARAM_PROFILE_NVTX, nullptr).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, nullptr, 64).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, nullptr).err, kInvalid);
  EXPECT_TRUE(LogHas("cuFileSetParameterString", "(null)"));
}

TEST_F(ParamsTest, BoolRoundTripsBeforeOpen) {
  for (const BoolCase &c : kBools) {
    SCOPED_TRACE(c.key);
    ASSERT_EQ(cuFileSetParameterBool(c.param, !c.def).err, kOk);
    EXPECT_EQ(GetBool(c.param), !c.def);
    ASSERT_EQ(cuFileSetParameterBool(c.param, c.def).err, kOk);
    EXPECT_EQ(GetBool(c.param), c.def);
  }
}

TEST_F(ParamsTest, StringRoundTripsBeforeOpen) {
  const struct {
    CUFileStringConfigParameter_t param;
    const char *set;
    const char *get;
  } cases[] = {
      {CUFILE_PARAM_LOGGING_LEVEL, "TRACE", "TRACE"},
      {CUFILE_PARAM_LOGGING_LEVEL, "info", "INFO"},  // names are case-insensitive
      {CUFILE_PARAM_ENV_LOGFILE_PATH, "/tmp/ufile test/x.log", "/tmp/ufile test/x.log"},
      {CUFILE_PARAM_ENV_LOGFILE_PATH, "", ""},
      {CUFILE_PARAM_LOG_DIR, "/var/tmp/ufile", "/var/tmp/ufile"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.set);
    ASSERT_EQ(cuFileSetParameterString(c.param, c.set).err, kOk);
    EXPECT_EQ(GetString(c.param), c.get);
  }
}

TEST_F(ParamsTest, StringRefusals) {
  EXPECT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "LOUD").err, kInvalid);
  EXPECT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "").err, kInvalid);
  EXPECT_TRUE(LogHas("cuFileSetParameterString", "LOUD"));
  std::string too_long(PATH_MAX, 'a');
  EXPECT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, too_long.c_str()).err, kInvalid);
  EXPECT_EQ(GetString(CUFILE_PARAM_LOGGING_LEVEL), "ERROR");
  EXPECT_EQ(GetString(CUFILE_PARAM_LOG_DIR), "");

  // The buffer must hold the value and its NUL.
  ASSERT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, "/abc").err, kOk);
  char buf[8] = "zzzzzzz";
  EXPECT_EQ(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, buf, 4).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, buf, 0).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, buf, -1).err, kInvalid);
  EXPECT_STREQ(buf, "zzzzzzz");
  EXPECT_EQ(cuFileGetParameterString(CUFILE_PARAM_LOG_DIR, buf, 5).err, kOk);
  EXPECT_STREQ(buf, "/abc");
}

TEST_F(ParamsTest, SlabArrays) {
  size_t sizes[16], counts[16];
  ASSERT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 3).err, kOk);
  EXPECT_EQ(std::vector<size_t>(sizes, sizes + 3), (std::vector<size_t>{4, 1024, 4096}));
  EXPECT_EQ(std::vector<size_t>(counts, counts + 3), (std::vector<size_t>{128, 64, 64}));

  const size_t new_sizes[] = {8, 2048}, new_counts[] = {10, 20};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(new_sizes, new_counts, 2).err, kOk);
  EXPECT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 3).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 1).err, kInvalid);
  ASSERT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 2).err, kOk);
  EXPECT_EQ(std::vector<size_t>(sizes, sizes + 2), (std::vector<size_t>{8, 2048}));
  EXPECT_EQ(std::vector<size_t>(counts, counts + 2), (std::vector<size_t>{10, 20}));
  EXPECT_EQ(cuFileGetParameterPosixPoolSlabArray(nullptr, counts, 2).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, nullptr, 2).err, kInvalid);
  EXPECT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 0).err, kInvalid);

  std::vector<size_t> ok16(16, 4), one16(16, 1);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(ok16.data(), one16.data(), 16).err, kOk);
  std::vector<size_t> ok17(17, 4), one17(17, 1);
  const size_t odd[] = {4, 6}, zero[] = {1, 0}, huge[] = {size_t{1} << 32, 4};  // past 2 TiB
  const size_t many[] = {1, 70000};
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(ok17.data(), one17.data(), 17).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(new_sizes, new_counts, 0).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(new_sizes, new_counts, -2).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(nullptr, new_counts, 2).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(new_sizes, nullptr, 2).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(odd, new_counts, 2).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(huge, new_counts, 2).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(new_sizes, zero, 2).err, kInvalid);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(new_sizes, many, 2).err, kInvalid);
  ASSERT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 16).err, kOk);  // unchanged
  EXPECT_TRUE(LogHas("cuFileSetParameterPosixPoolSlabArray", "len 17"));
}

TEST_F(ParamsTest, StagedValuesApplyOnTopWithApiSource) {
  ScopedEnv level("CUFILE_LOGGING_LEVEL", "DEBUG");
  EXPECT_EQ(GetString(CUFILE_PARAM_LOGGING_LEVEL), "DEBUG");  // environment layer
  ASSERT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "WARN").err, kOk);
  EXPECT_EQ(GetString(CUFILE_PARAM_LOGGING_LEVEL), "WARN");  // staged over it
  ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 512).err, kOk);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_FORCE_ODIRECT_MODE, true).err, kOk);
  const size_t s[] = {64}, n[] = {3};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(s, n, 1).err, kOk);

  Config cfg;
  ApplyStagedParams(cfg, /*clear=*/false);
  EXPECT_EQ(cfg.log_level, LogLevel::kWarn);
  EXPECT_EQ(cfg.io_batchsize, 512u);
  EXPECT_TRUE(cfg.force_odirect_mode);
  EXPECT_EQ(cfg.posix_pool_slab_size_kb, std::vector<size_t>{64});
  EXPECT_EQ(cfg.posix_pool_slab_count, std::vector<size_t>{3});
  for (const char *key :
       {"logging.level", "properties.io_batchsize", "properties.force_odirect_mode",
        "properties.posix_pool_slab_size_kb", "properties.posix_pool_slab_count"})
    EXPECT_EQ(cfg.sources.at(key), ConfigSource::kApi) << key;
  EXPECT_EQ(cfg.sources.size(), 5u);

  Config consumed;
  ApplyStagedParams(consumed, /*clear=*/true);
  EXPECT_EQ(consumed.io_batchsize, 512u);
  EXPECT_EQ(GetSize(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 128u);  // nothing staged now
  EXPECT_EQ(GetString(CUFILE_PARAM_LOGGING_LEVEL), "DEBUG");
}

// The driver is written by another layer; this needs cuFileDriverOpen/Close.
TEST_F(ParamsTest, AroundOpen) {
  ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 256).err, kOk);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, true).err, kOk);
  ASSERT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, "/var/tmp").err, kOk);
  const size_t s[] = {8, 16}, n[] = {1, 2};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(s, n, 2).err, kOk);

  ASSERT_EQ(cuFileDriverOpen().err, kOk);
  // The running Config has the staged values.
  EXPECT_EQ(GetSize(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 256u);
  EXPECT_TRUE(GetBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE));
  EXPECT_EQ(GetString(CUFILE_PARAM_LOG_DIR), "/var/tmp");
  size_t sizes[2], counts[2];
  EXPECT_EQ(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 2).err, kOk);
  EXPECT_EQ(sizes[1], 16u);
  EXPECT_EQ(counts[1], 2u);

  // Every setter is refused while open, valid value or not; nothing changes.
  EXPECT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64).err,
            CU_FILE_DRIVER_ALREADY_OPEN);
  EXPECT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE, false).err,
            CU_FILE_DRIVER_ALREADY_OPEN);
  EXPECT_EQ(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "INFO").err,
            CU_FILE_DRIVER_ALREADY_OPEN);
  EXPECT_EQ(cuFileSetParameterPosixPoolSlabArray(s, n, 2).err, CU_FILE_DRIVER_ALREADY_OPEN);
  EXPECT_EQ(GetSize(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 256u);
  EXPECT_TRUE(GetBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE));
  EXPECT_EQ(GetString(CUFILE_PARAM_LOGGING_LEVEL), "ERROR");
  size_t lo = 0, hi = 0;
  EXPECT_EQ(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, &lo, &hi).err, kOk);
  EXPECT_EQ(hi, 3u);
  EXPECT_TRUE(LogHas("cuFileSetParameterSizeT", "already open"));
  ASSERT_EQ(cuFileDriverClose().err, kOk);

  // The open consumed the staged values.
  EXPECT_EQ(GetSize(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 128u);
  EXPECT_FALSE(GetBool(CUFILE_PARAM_PROPERTIES_USE_POLL_MODE));
  EXPECT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64).err, kOk);
  EXPECT_EQ(GetSize(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE), 64u);
}

}  // namespace
}  // namespace ufile
