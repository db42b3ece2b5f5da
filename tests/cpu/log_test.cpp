// SPDX-License-Identifier: Apache-2.0
// base/log: level filtering, the line format, where the file goes, that no
// file appears until an enabled message is logged, the stderr fallback,
// concurrent writers, and the self-configuration before ConfigureLog (run in
// fresh processes: gtest's "threadsafe" death tests re-execute the binary).
#include "base/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/fork_children.h"
#include "support/test_util.h"

namespace ufile {
namespace {

using test::HungForkChildren;
using test::ScopedEnv;
using test::TempDir;

std::vector<std::string> ReadLines(const std::string &path) {
  std::vector<std::string> lines;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

bool Exists(const std::string &path) {
  return std::filesystem::exists(path);
}

Config LogTo(const std::string &path, LogLevel level) {
  Config cfg;
  cfg.log_level = level;
  cfg.log_file_path = path;
  return cfg;
}

// "2026-11-22T10:11:12.123456Z pid=1 tid=2 ERROR log_test.cpp:3: text"
const std::regex kLine(
    R"(^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d{6}Z pid=(\d+) tid=(\d+) ([A-Z]+) ([\w.]+):(\d+): (.*)$)");

class LogTest : public ::testing::Test {
 protected:
  ~LogTest() override { ConfigureLog(LogTo("/dev/null", LogLevel::kError)); }
  TempDir dir_;
};

TEST_F(LogTest, ALevelEnablesItselfAndEveryMoreSevereOne) {
  for (int configured = 0; configured <= static_cast<int>(LogLevel::kTrace); ++configured) {
    ConfigureLog(LogTo(dir_.File("x.log"), static_cast<LogLevel>(configured)));
    for (int level = 0; level <= static_cast<int>(LogLevel::kTrace); ++level)
      EXPECT_EQ(LogEnabled(static_cast<LogLevel>(level)), level <= configured)
          << "configured " << configured << ", level " << level;
  }
}

TEST_F(LogTest, NoFileUntilAnEnabledMessage) {
  std::string path = dir_.File("quiet.log");
  ConfigureLog(LogTo(path, LogLevel::kError));
  UFILE_LOG_WARN("warn %d", 1);
  UFILE_LOG_INFO("info %d", 2);
  UFILE_LOG_DEBUG("debug %d", 3);
  UFILE_LOG_TRACE("trace %d", 4);
  LogMessage(LogLevel::kInfo, __FILE__, __LINE__, "direct call below the level");
  EXPECT_FALSE(Exists(path));
  EXPECT_EQ(LogFilePath(), "");

  UFILE_LOG_ERROR("error %d", 5);
  EXPECT_EQ(LogFilePath(), path);
  std::vector<std::string> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(" ERROR "), std::string::npos);
  EXPECT_NE(lines[0].find("error 5"), std::string::npos);
}

TEST_F(LogTest, LineHasTimePidTidLevelAndSource) {
  std::string path = dir_.File("format.log");
  ConfigureLog(LogTo(path, LogLevel::kInfo));
  time_t before = time(nullptr);
  int line = __LINE__ + 1;
  UFILE_LOG_INFO("hello %d %s", 42, "world");
  std::vector<std::string> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 1u);
  std::smatch m;
  ASSERT_TRUE(std::regex_match(lines[0], m, kLine)) << lines[0];
  EXPECT_EQ(std::stol(m[2]), static_cast<long>(getpid()));
  EXPECT_EQ(std::stol(m[3]), static_cast<long>(syscall(SYS_gettid)));
  EXPECT_EQ(m[4], "INFO");
  EXPECT_EQ(m[5], "log_test.cpp");
  EXPECT_EQ(std::stoi(m[6]), line);
  EXPECT_EQ(m[7], "hello 42 world");
  tm utc{};
  std::string stamp = m[1];
  ASSERT_NE(strptime(stamp.c_str(), "%Y-%m-%dT%H:%M:%S", &utc), nullptr);
  time_t logged = timegm(&utc);
  EXPECT_LE(before - 1, logged);
  EXPECT_LE(logged, time(nullptr) + 1);
}

TEST_F(LogTest, MultiLineMessagesStayOneLine) {
  std::string path = dir_.File("flat.log");
  ConfigureLog(LogTo(path, LogLevel::kError));
  UFILE_LOG_ERROR("first\nsecond\r\n");
  std::vector<std::string> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].substr(lines[0].size() - 12), "first second");
}

TEST_F(LogTest, FilePathBeatsDirectory) {
  Config cfg = LogTo(dir_.File("named.log"), LogLevel::kError);
  cfg.log_dir = dir_.path();
  ConfigureLog(cfg);
  UFILE_LOG_ERROR("x");
  EXPECT_EQ(LogFilePath(), dir_.File("named.log"));
  EXPECT_EQ(ReadLines(dir_.File("named.log")).size(), 1u);
}

TEST_F(LogTest, DirectoryGetsOneFilePerProcess) {
  Config cfg;
  cfg.log_dir = dir_.path();
  ConfigureLog(cfg);
  UFILE_LOG_ERROR("x");
  std::string expected = dir_.File("cufile_" + std::to_string(getpid()) + ".log");
  EXPECT_EQ(LogFilePath(), expected);
  EXPECT_EQ(ReadLines(expected).size(), 1u);
}

TEST_F(LogTest, DefaultIsCufileLogInTheWorkingDirectory) {
  std::filesystem::path old = std::filesystem::current_path();
  std::filesystem::current_path(dir_.path());
  ConfigureLog(Config());
  UFILE_LOG_ERROR("x");
  std::filesystem::current_path(old);
  EXPECT_EQ(LogFilePath(), "cufile.log");
  EXPECT_EQ(ReadLines(dir_.File("cufile.log")).size(), 1u);
}

TEST_F(LogTest, ReconfiguringSwitchesTheFile) {
  ConfigureLog(LogTo(dir_.File("a.log"), LogLevel::kError));
  UFILE_LOG_ERROR("to a");
  ConfigureLog(LogTo(dir_.File("b.log"), LogLevel::kError));
  EXPECT_EQ(LogFilePath(), "");
  UFILE_LOG_ERROR("to b");
  UFILE_LOG_ERROR("to b again");
  EXPECT_EQ(ReadLines(dir_.File("a.log")).size(), 1u);
  EXPECT_EQ(ReadLines(dir_.File("b.log")).size(), 2u);
}

TEST_F(LogTest, UnopenableFileFallsBackToStderrOnce) {
  std::string path = dir_.File("missing-dir/x.log");
  ConfigureLog(LogTo(path, LogLevel::kError));
  testing::internal::CaptureStderr();
  UFILE_LOG_ERROR("boom %d", 1);
  UFILE_LOG_ERROR("boom %d", 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(LogFilePath(), "/dev/stderr");
  size_t note = err.find("cannot open log file " + path);
  ASSERT_NE(note, std::string::npos) << err;
  EXPECT_EQ(err.find("cannot open log file", note + 1), std::string::npos) << err;
  EXPECT_NE(err.find("boom 1"), std::string::npos);
  EXPECT_NE(err.find("boom 2"), std::string::npos);
}

// Opening a FIFO for writing waits for a reader: with none, the first line
// goes to stderr at once. A reader comes after 10 s, so that a log that
// waits fails this test instead of hanging it.
TEST_F(LogTest, AFifoWithNoReaderFallsBackToStderr) {
  std::string path = dir_.File("fifo.log");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  ConfigureLog(LogTo(path, LogLevel::kError));
  std::atomic<bool> logged{false};
  int reader = -1;
  std::thread rescue([&] {
    for (int i = 0; i < 1000 && !logged.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!logged.load()) reader = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  });
  testing::internal::CaptureStderr();
  UFILE_LOG_ERROR("past the %s", "fifo");
  logged = true;
  std::string err = testing::internal::GetCapturedStderr();
  rescue.join();
  EXPECT_EQ(reader, -1) << "the log waited 10 s for a reader";
  if (reader >= 0) close(reader);
  EXPECT_EQ(LogFilePath(), "/dev/stderr");
  EXPECT_NE(err.find("cannot open log file " + path + ": "), std::string::npos) << err;
  EXPECT_NE(err.find("(a FIFO with no reader)"), std::string::npos) << err;
  EXPECT_NE(err.find("past the fifo"), std::string::npos) << err;
}

TEST_F(LogTest, ConcurrentLinesStayWhole) {
  std::string path = dir_.File("threads.log");
  ConfigureLog(LogTo(path, LogLevel::kInfo));
  constexpr int kThreads = 8, kLines = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) UFILE_LOG_INFO("thread %d line %d", t, i);
    });
  for (std::thread &t : threads) t.join();
  std::vector<std::string> lines = ReadLines(path);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kLines));
  std::set<std::string> messages;
  for (const std::string &line : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, kLine)) << line;
    messages.insert(m[7]);
  }
  EXPECT_EQ(messages.size(), static_cast<size_t>(kThreads * kLines));
}

// A fork() while another thread is writing a line must not leave the
// child's log locked, neither by the log's own lock nor by one it takes
// inside glibc (gmtime_r's): the child logs its own line and exits.
// Every child has a deadline; one that misses it is killed and counted.
TEST_F(LogTest, ChildOfAForkWhileAThreadLogsCanLog) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizers' allocators are not fork-safe with threads (fork_test.cpp)";
#endif
  std::string path = dir_.File("fork.log");
  ConfigureLog(LogTo(path, LogLevel::kInfo));
  const int hung = HungForkChildren([] { UFILE_LOG_INFO("parent thread line"); },
                                    [](int i) {
                                      UFILE_LOG_INFO("child %d line", i);
                                      return true;
                                    });
  EXPECT_EQ(hung, 0) << "a child hung on the log lock it inherited";
}

// Before ConfigureLog, the first message configures the log from the
// environment and the JSON files; what config loading itself logs (here, an
// unknown key) reaches the same file. Runs in a fresh process.
TEST(LogBootstrapDeathTest, ConfiguresItselfFromEnvironmentAndJson) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  test::WriteTextFile(dir.File("system.json"), R"({"logging": {"level": "INFO"}, "mystery": 1})");
  ScopedEnv system("UFILE_SYSTEM_JSON_PATH", dir.File("system.json"));
  ScopedEnv env_json("CUFILE_ENV_PATH_JSON", std::nullopt);
  ScopedEnv level("CUFILE_LOGGING_LEVEL", std::nullopt);
  ScopedEnv file("CUFILE_LOGFILE_PATH", dir.File("boot.log"));
  EXPECT_EXIT(
      {
        bool debug = LogEnabled(LogLevel::kDebug);
        UFILE_LOG_INFO("after bootstrap");
        std::vector<std::string> lines = ReadLines(dir.File("boot.log"));
        bool ok = !debug && lines.size() == 2 && lines[0].find(" WARN ") != std::string::npos &&
                  lines[0].find("mystery") != std::string::npos &&
                  lines[1].find(" INFO ") != std::string::npos &&
                  lines[1].find("after bootstrap") != std::string::npos &&
                  LogFilePath() == dir.File("boot.log");
        for (const std::string &l : lines) fprintf(stderr, "line: %s\n", l.c_str());
        std::filesystem::remove_all(dir.path());
        _exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(LogBootstrapDeathTest, DefaultsToErrorLevelAndCufileLog) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  ScopedEnv system("UFILE_SYSTEM_JSON_PATH", dir.File("none.json"));
  ScopedEnv env_json("CUFILE_ENV_PATH_JSON", std::nullopt);
  ScopedEnv level("CUFILE_LOGGING_LEVEL", std::nullopt);
  ScopedEnv file("CUFILE_LOGFILE_PATH", std::nullopt);
  EXPECT_EXIT(
      {
        std::filesystem::current_path(dir.path());
        UFILE_LOG_WARN("not written");
        bool quiet = !Exists("cufile.log") && LogFilePath().empty();
        UFILE_LOG_ERROR("written");
        std::vector<std::string> lines = ReadLines("cufile.log");
        bool ok = quiet && lines.size() == 1 && lines[0].find("written") != std::string::npos &&
                  LogFilePath() == "cufile.log";
        std::filesystem::remove_all(dir.path());
        _exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace ufile
