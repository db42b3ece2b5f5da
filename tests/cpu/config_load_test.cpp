// SPDX-License-Identifier: Apache-2.0
// Loading the configuration against hostile files and heavy callers: a FIFO
// or device named as the JSON file (refused, no hang), a NUL byte followed by
// garbage, a file of tens of thousands of unknown keys (linear, a bounded
// number of log lines), a key of 100 KB (cut in the log), each problem logged
// once per open however many getters ran before it, refusals in a loop
// (limited lines), UFILE_ENGINE in any case. Tests that watch the log run
// their calls in a new process (the log configures itself once per process).
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

// Runs the disabled test ConfigLoadChild.DISABLED_<name> in a new process
// (this binary again: a fresh log) with the current environment; its exit
// code (0: passed), or -1 if it was still running after timeout_s (then
// killed: a hang).
int RunChild(const std::string &name, int timeout_s = 60) {
  const std::string filter = "--gtest_filter=ConfigLoadChild.DISABLED_" + name;
  const pid_t pid = ::fork();
  if (pid == 0) {
    const char *argv[] = {"config_load_test", filter.c_str(), "--gtest_also_run_disabled_tests",
                          nullptr};
    ::execv("/proc/self/exe", const_cast<char *const *>(argv));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The bodies RunChild runs, each in a process of its own.
TEST(ConfigLoadChild, DISABLED_OpenAndClose) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
}
TEST(ConfigLoadChild, DISABLED_LoadDefaults) {
  EXPECT_EQ(LoadConfig().io_batchsize, Config().io_batchsize);
}
TEST(ConfigLoadChild, DISABLED_CountUnknown) {
  EXPECT_EQ(LoadConfig().unknown_keys.size(),
            static_cast<size_t>(std::atoi(std::getenv("UFILE_TEST_UNKNOWN"))));
}
TEST(ConfigLoadChild, DISABLED_GettersThenTwoOpens) {
  size_t v = 0;
  for (int i = 0; i < 10; ++i)
    ASSERT_EQ(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v).err,
              CU_FILE_SUCCESS);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  }
}
TEST(ConfigLoadChild, DISABLED_RefuseInALoop) {
  for (int i = 0; i < 5000; ++i)
    ASSERT_EQ(cuFileGetStatsLevel(nullptr).err, CU_FILE_INVALID_VALUE);
}

std::vector<std::string> LinesWith(const std::string &path, const std::string &needle) {
  std::vector<std::string> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

class ConfigLoad : public ::testing::Test {
 protected:
  std::string Log() const { return dir_.File("cufile.log"); }
  TempDir dir_;
};

TEST_F(ConfigLoad, FifoAsJsonIsRefusedWithoutHanging) {
  const std::string fifo = dir_.File("cufile.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ScopedEnv env("CUFILE_ENV_PATH_JSON", fifo), sys("UFILE_SYSTEM_JSON_PATH", fifo),
      log("CUFILE_LOGFILE_PATH", Log());
  const int rc = RunChild("OpenAndClose", 30);
  ASSERT_NE(rc, -1) << "cuFileDriverOpen hung on a FIFO";
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(LinesWith(Log(), "is not a regular file").size(), 2u) << "one per file, once";
  // A directory is no JSON file either.
  ScopedEnv dir_env("CUFILE_ENV_PATH_JSON", dir_.path());
  EXPECT_EQ(RunChild("LoadDefaults", 30), 0);
}

TEST_F(ConfigLoad, NulAndGarbageAfterTheObjectIsRefused) {
  Config cfg;
  const std::string good = R"({"properties": {"io_batchsize": 7}})";
  EXPECT_FALSE(ApplyJsonConfig(cfg, good + std::string("\0garbage", 8), ConfigSource::kEnvJson,
                               "test"));
  EXPECT_FALSE(ApplyJsonConfig(cfg, good + std::string("\0", 1), ConfigSource::kEnvJson, "test"));
  EXPECT_FALSE(ApplyJsonConfig(cfg, good + " garbage", ConfigSource::kEnvJson, "test"));
  EXPECT_EQ(cfg.io_batchsize, Config().io_batchsize);
  EXPECT_TRUE(ApplyJsonConfig(cfg, good, ConfigSource::kEnvJson, "test"));
  EXPECT_EQ(cfg.io_batchsize, 7u);
}

TEST_F(ConfigLoad, ManyUnknownKeysAreLinearAndLoggedBriefly) {
  constexpr int kKeys = 50000;
  std::string text = "{\"properties\": {";
  for (int i = 0; i < kKeys; ++i) text += (i ? ",\"u" : "\"u") + std::to_string(i) + "\":0";
  text += ", \"u7\": 1}}";  // a duplicate
  WriteTextFile(dir_.File("many.json"), text);
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("many.json")),
      sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json")), log("CUFILE_LOGFILE_PATH", Log()),
      level("CUFILE_LOGGING_LEVEL", "WARN"), n("UFILE_TEST_UNKNOWN", std::to_string(kKeys));
  EXPECT_EQ(RunChild("CountUnknown"), 0) << "every unknown key listed once";
  const size_t lines = LinesWith(Log(), "unknown key").size();
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 20u) << "one line per unknown key made the log as large as the file";
  EXPECT_EQ(LinesWith(Log(), "more unknown keys ignored").size(), 1u);
}

TEST_F(ConfigLoad, LongKeysAreCutInTheLog) {
  const std::string key(100000, 'k');
  WriteTextFile(dir_.File("long.json"), "{\"" + key + "\": 1}");
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("long.json")),
      sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json")), log("CUFILE_LOGFILE_PATH", Log()),
      level("CUFILE_LOGGING_LEVEL", "WARN"), n("UFILE_TEST_UNKNOWN", "1");
  EXPECT_EQ(RunChild("CountUnknown"), 0);
  const std::vector<std::string> lines = LinesWith(Log(), "unknown key");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LT(lines[0].size(), 600u);
  EXPECT_NE(lines[0].find("100000 bytes"), std::string::npos) << lines[0];
}

// Ten getters before open, then open, close, open: the files are parsed
// (and their problems logged) once per open.
TEST_F(ConfigLoad, EachProblemIsLoggedOncePerOpen) {
  WriteTextFile(dir_.File("env.json"),
                R"({"properties": {"no_such_key": 1, "io_batchsize": "many"}})");
  ScopedEnv env("CUFILE_ENV_PATH_JSON", dir_.File("env.json")),
      sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json")), log("CUFILE_LOGFILE_PATH", Log()),
      level("CUFILE_LOGGING_LEVEL", "WARN");
  ASSERT_EQ(RunChild("GettersThenTwoOpens"), 0);
  EXPECT_EQ(LinesWith(Log(), "unknown key properties.no_such_key").size(), 2u);
  EXPECT_EQ(LinesWith(Log(), "properties.io_batchsize = \"many\"").size(), 2u);
}

TEST_F(ConfigLoad, RepeatedRefusalsAreRateLimited) {
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json")),
      log("CUFILE_LOGFILE_PATH", Log()), env("CUFILE_ENV_PATH_JSON", std::nullopt);
  constexpr int kCalls = 5000;  // as DISABLED_RefuseInALoop makes
  EXPECT_EQ(RunChild("RefuseInALoop"), 0);
  const size_t lines = LinesWith(Log(), "NULL level").size();
  EXPECT_GE(lines, 1u);
  EXPECT_LT(lines, static_cast<size_t>(kCalls)) << "every refusal wrote a line";
}

TEST_F(ConfigLoad, EngineNamesInAnyCase) {
  ScopedEnv sys("UFILE_SYSTEM_JSON_PATH", dir_.File("none.json")),
      env("CUFILE_ENV_PATH_JSON", std::nullopt);
  {
    ScopedEnv e("UFILE_ENGINE", "IO_URING");
    EXPECT_EQ(LoadConfig().engine, EngineKind::kIoUring);
  }
  {
    ScopedEnv e("UFILE_ENGINE", "Thread_Pool");
    EXPECT_EQ(LoadConfig().engine, EngineKind::kThreadPool);
  }
  Config cfg;
  ASSERT_TRUE(ApplyJsonConfig(cfg, R"({"ufile": {"engine": "THREAD_POOL"}})",
                              ConfigSource::kEnvJson, "test"));
  EXPECT_EQ(cfg.engine, EngineKind::kThreadPool);
}

}  // namespace
}  // namespace ufile::test
