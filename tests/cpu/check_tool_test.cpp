// SPDX-License-Identifier: Apache-2.0
// ufile-check on this machine: it names the io_uring status and the mount of
// the working directory, proves I/O works there and exits 0; --json says the
// same for scripts; a missing path is a failure (exit 1); bad usage exits 2.
#include <gtest/gtest.h>
#include <limits.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "tools/run_tool.h"

#ifndef UFILE_CHECK_BIN
#define UFILE_CHECK_BIN ""
#endif

namespace ufile::test {
namespace {

std::string Tool() {
  return ToolPath("UFILE_CHECK_BIN", UFILE_CHECK_BIN);
}

std::string RealPath(const std::string &p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? buf : p;
}

const nlohmann::json *FindLine(const nlohmann::json &doc, const std::string &section,
                               const std::string &key) {
  for (const auto &s : doc["sections"])
    if (s["name"] == section)
      for (const auto &l : s["lines"])
        if (l["key"] == key) return &l;
  return nullptr;
}

class CheckTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Tool().empty()) GTEST_SKIP() << "ufile-check not built (set UFILE_CHECK_BIN)";
  }
  TempDir dir_;
};

TEST_F(CheckTool, NamesIoUringAndWorkingDirectoryMountAndExitsZero) {
  const ToolRun run = RunTool(Tool(), {}, dir_.path());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(CheckLine(run.out, "io_uring"), "(absent)") << run.out;
  EXPECT_NE(run.out.find("working directory"), std::string::npos);
  EXPECT_EQ(CheckLine(run.out, "working directory"), RealPath(dir_.path())) << run.out;
  EXPECT_EQ(CheckLine(run.out, "mount").substr(0, 1), "/") << run.out;
  EXPECT_NE(CheckLine(run.out, "filesystem").find("(statfs magic 0x"), std::string::npos);
  EXPECT_NE(CheckLine(run.out, "O_DIRECT"), "(absent)");
  EXPECT_NE(run.out.find("round trip"), std::string::npos);
  EXPECT_NE(run.out.find("RLIMIT_MEMLOCK"), std::string::npos);
  EXPECT_NE(run.out.find("profile.cufile_stats"), std::string::npos);
  EXPECT_NE(run.out.find("== GPUs =="), std::string::npos);
  EXPECT_EQ(run.out.find("[FAIL]"), std::string::npos) << run.out;
}

TEST_F(CheckTool, JsonForScripts) {
  // No system file (a GPU machine has NVIDIA's /etc/cufile.json), no override.
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", std::nullopt);
  const ToolRun run = RunTool(Tool(), {"--json"}, dir_.path());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << run.out;
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["failures"], 0);
  const nlohmann::json *uring = FindLine(doc, "io_uring", "io_uring");
  ASSERT_NE(uring, nullptr);
  EXPECT_TRUE((*uring)["status"] == "ok" || (*uring)["status"] == "warn");
  const nlohmann::json *cwd = FindLine(doc, "Mounts in use", "working directory");
  ASSERT_NE(cwd, nullptr);
  EXPECT_EQ((*cwd)["value"], RealPath(dir_.path()));
  const nlohmann::json *src = FindLine(doc, "Configuration", "profile.cufile_stats");
  ASSERT_NE(src, nullptr);
  EXPECT_NE((*src)["value"].get<std::string>().find("default"), std::string::npos);
}

TEST_F(CheckTool, ConfigSourceIsNamed) {
  WriteTextFile(dir_.File("cufile.json"), R"({ // comment
    "profile": {"cufile_stats": 2}, "no_such_section": {"x": 1}})");
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("cufile.json"));
  const ToolRun run = RunTool(Tool(), {"--json"}, dir_.path());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << run.out;
  const nlohmann::json *stats = FindLine(doc, "Configuration", "profile.cufile_stats");
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ((*stats)["value"], "2  (" + dir_.File("cufile.json") + " (CUFILE_ENV_PATH_JSON))");
}

TEST_F(CheckTool, NvidiaShippedSystemValuesAreReportedAsUnset) {
  WriteTextFile(dir_.File("system.json"),
                R"({"execution": {"max_io_threads": 4, "max_request_parallelism": 6}})");
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir_.File("system.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", std::nullopt);
  const ToolRun run = RunTool(Tool(), {"--json"}, dir_.path());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << run.out;
  const nlohmann::json *threads = FindLine(doc, "Configuration", "execution.max_io_threads");
  ASSERT_NE(threads, nullptr);
  EXPECT_NE((*threads)["value"].get<std::string>().find("NVIDIA's shipped one"),
            std::string::npos)
      << (*threads)["value"];
  const nlohmann::json *par = FindLine(doc, "Configuration", "execution.max_request_parallelism");
  ASSERT_NE(par, nullptr);
  EXPECT_EQ((*par)["value"], "6  (" + dir_.File("system.json") + ")");
}

// Settings without effect in ufile are listed with their value and marked
// inert with the reason; an inert key that has no value is listed where a
// file names it. Effective settings carry no mark. The locked-memory section
// bounds the pinned staging by max_device_pinned_mem_size_kb.
TEST_F(CheckTool, InertSettingsAreMarkedWithTheReason) {
  WriteTextFile(dir_.File("cufile.json"),
                R"({"properties": {"use_poll_mode": true, "rdma_dc_key": "0x1",
                                   "max_device_pinned_mem_size_kb": 65536}})");
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json"));
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("cufile.json"));
  const ToolRun run = RunTool(Tool(), {"--json"}, dir_.path());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << run.out;
  auto value = [&](const std::string &key) {
    const nlohmann::json *line = FindLine(doc, "Configuration", key);
    return line ? (*line)["value"].get<std::string>() : "(absent)";
  };
  EXPECT_EQ(value("properties.use_poll_mode"),
            "true  (" + dir_.File("cufile.json") +
                " (CUFILE_ENV_PATH_JSON)); inert: ufile has no completion polling: it waits for "
                "the kernel's completion (io_uring or pread)");
  for (const char *key : {"properties.poll_mode_max_size_kb", "properties.skip_topology_detection",
                          "properties.max_device_cache_size_kb",
                          "properties.per_buffer_cache_size_kb"})
    EXPECT_NE(value(key).find("  (default); inert: ufile "), std::string::npos)
        << key << ": " << value(key);
  EXPECT_EQ(value("properties.rdma_dc_key"), "accepted; inert: needs nvidia-fs");
  for (const char *key : {"properties.max_device_pinned_mem_size_kb",
                          "execution.max_io_queue_depth", "properties.io_batchsize"})
    EXPECT_EQ(value(key).find("inert"), std::string::npos) << key << ": " << value(key);
  // The pinned part of the staging pool is bounded by the same key.
  const nlohmann::json *pool = FindLine(doc, "Locked memory", "pinned staging pool");
  ASSERT_NE(pool, nullptr);
  EXPECT_NE((*pool)["value"].get<std::string>().find("pinned up to "
                                                     "max_device_pinned_mem_size_kb"),
            std::string::npos)
      << (*pool)["value"];
}

// A full filesystem: nothing can be probed there, which CHECK.md reports as
// [WARN] "not probed", not as a failure of ufile (exit 0). Needs a tmpfs
// mount of its own (root with CAP_SYS_ADMIN), else skipped.
TEST_F(CheckTool, AFullFilesystemIsNotProbedNotFailed) {
  const std::string mnt = dir_.File("full");
  ASSERT_EQ(mkdir(mnt.c_str(), 0700), 0);
  if (mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  {
    std::vector<char> fill(64 << 10, 'x');
    const int fd = open((mnt + "/fill").c_str(), O_CREAT | O_WRONLY, 0600);
    while (fd >= 0 && write(fd, fill.data(), fill.size()) > 0) {
    }
    if (fd >= 0) close(fd);
  }
  const ToolRun run = RunTool(Tool(), {mnt}, dir_.path());
  umount(mnt.c_str());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("not probed: cannot create a file here"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("[FAIL]"), std::string::npos) << run.out;
}

TEST_F(CheckTool, MissingPathFails) {
  const ToolRun run = RunTool(Tool(), {dir_.File("no-such-dir")}, dir_.path());
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("[FAIL]"), std::string::npos);
  EXPECT_NE(run.out.find("remedy:"), std::string::npos);
}

TEST_F(CheckTool, BadUsage) {
  const ToolRun bad = RunTool(Tool(), {"--no-such-option"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("ufile-check: unknown option --no-such-option\n"), std::string::npos)
      << bad.out;
  for (const char *help : {"--help", "-h"}) {
    const ToolRun run = RunTool(Tool(), {help});
    EXPECT_EQ(run.exit_code, 0) << help << ": " << run.out;
    EXPECT_EQ(run.out.rfind("usage: ufile-check", 0), 0u) << help << ": " << run.out;
  }
}

// Device-initiated I/O runs kernels: with no usable GPU the tool says it
// cannot run, and why, whatever io_uring offers.
TEST_F(CheckTool, DeviceInitiatedIoNeedsAGpu) {
  const ToolRun run = RunTool(Tool(), {}, dir_.path());
  const std::string gpu = CheckLine(run.out, "GPU");
  if (gpu.rfind("none usable: ", 0) != 0) GTEST_SKIP() << "a GPU is usable here";
  const std::string why = gpu.substr(13, gpu.find(';') - 13);
  EXPECT_EQ(CheckLine(run.out, "device-initiated I/O"),
            "cannot run here: no usable GPU (" + why + ")")
      << run.out;
  EXPECT_EQ(run.out.find("can run here"), std::string::npos) << run.out;
}

// The data path speaks of GPU memory only where a GPU is usable.
TEST_F(CheckTool, DataPathNamesGpuMemoryOnlyWithAGpu) {
  const ToolRun run = RunTool(Tool(), {}, dir_.path());
  const std::string path = CheckLine(run.out, "data path");
  ASSERT_NE(path, "(absent)") << run.out;
  if (path == "unknown (not probed)") GTEST_SKIP() << "the working directory was not probed";
  const bool gpu = CheckLine(run.out, "GPU").rfind("none usable: ", 0) != 0;
  EXPECT_EQ(path.find("GPU memory") != std::string::npos, gpu) << path;
  EXPECT_EQ(path.find("host buffers only here (no usable GPU)") != std::string::npos, !gpu)
      << path;
}

}  // namespace
}  // namespace ufile::test
