// SPDX-License-Identifier: Apache-2.0
// NVIDIA's shipped pipeline-geometry values in the system cufile.json count
// as unset; any other value, or the same value from another layer, counts.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/config.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

const char *kNvidiaShipped = R"({
  // as CUDA installs it
  "execution": {"max_io_threads": 4, "max_request_parallelism": 4,
                "min_io_threshold_size_kb": 8192},
  "properties": {"posix_pool_slab_size_kb": [4, 1024, 16384],
                 "posix_pool_slab_count": [128, 64, 64]}
})";

bool Ignored(const Config &c, const std::string &key) {
  return std::count(c.vendor_defaults_ignored.begin(), c.vendor_defaults_ignored.end(), key) == 1;
}

TEST(ConfigVendor, ShippedSystemValuesAreTreatedAsUnset) {
  TempDir dir;
  WriteTextFile(dir.File("system.json"), kNvidiaShipped);
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir.File("system.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", std::nullopt);
  const Config c = LoadConfig();
  const Config d;
  EXPECT_EQ(c.max_io_threads, d.max_io_threads);
  EXPECT_EQ(c.max_request_parallelism, d.max_request_parallelism);
  EXPECT_EQ(c.min_io_threshold_size_kb, d.min_io_threshold_size_kb);
  EXPECT_EQ(c.posix_pool_slab_size_kb, d.posix_pool_slab_size_kb);
  EXPECT_EQ(c.posix_pool_slab_count, d.posix_pool_slab_count);
  EXPECT_EQ(c.vendor_defaults_ignored.size(), 4u);
  EXPECT_TRUE(Ignored(c, "execution.max_io_threads"));
  EXPECT_EQ(c.sources.count("execution.max_io_threads"), 0u);
}

TEST(ConfigVendor, OtherSystemValuesAreHonoured) {
  TempDir dir;
  WriteTextFile(dir.File("system.json"),
                R"({"execution": {"max_io_threads": 6, "max_request_parallelism": 4}})");
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir.File("system.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", std::nullopt);
  const Config c = LoadConfig();
  EXPECT_EQ(c.max_io_threads, 6u);
  EXPECT_EQ(c.max_request_parallelism, Config{}.max_request_parallelism);
  EXPECT_FALSE(Ignored(c, "execution.max_io_threads"));
  EXPECT_TRUE(Ignored(c, "execution.max_request_parallelism"));
}

TEST(ConfigVendor, SameValuesFromTheUserFileAreHonoured) {
  TempDir dir;
  WriteTextFile(dir.File("empty.json"), "{}");
  WriteTextFile(dir.File("user.json"), kNvidiaShipped);
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir.File("empty.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir.File("user.json"));
  const Config c = LoadConfig();
  EXPECT_EQ(c.max_io_threads, 4u);
  EXPECT_EQ(c.min_io_threshold_size_kb, 8192u);
  EXPECT_EQ(c.posix_pool_slab_size_kb, (std::vector<size_t>{4, 1024, 16384}));
  EXPECT_TRUE(c.vendor_defaults_ignored.empty());
}

}  // namespace
}  // namespace ufile::test
