// SPDX-License-Identifier: Apache-2.0
// ufile-demo's command line and clean-up: a bad -s is a usage error (exit
// 2, a message naming the range), never an uncaught exception; a good run
// verifies and removes its file; a run that fails after creating its file
// (here: the file size limit stops the write) says which call failed, by
// the cuFile status or errno, and still removes the file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tools/run_tool.h"
#include "support/test_util.h"

#ifndef UFILE_DEMO_BIN
#define UFILE_DEMO_BIN ""
#endif

namespace ufile::test {
namespace {

std::string Tool() { return ToolPath("UFILE_DEMO_BIN", UFILE_DEMO_BIN); }

bool Exists(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

class DemoTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Tool().empty()) GTEST_SKIP() << "ufile-demo not built (set UFILE_DEMO_BIN)";
  }
  TempDir dir_;
  ScopedEnv log_{"CUFILE_LOGFILE_PATH", dir_.File("cufile.log")};
};

TEST_F(DemoTool, HelpAndUnknownOptions) {
  for (const char *help : {"--help", "-h"}) {
    const ToolRun run = RunTool(Tool(), {help}, dir_.path());
    EXPECT_EQ(run.exit_code, 0) << help << ": " << run.out;
    EXPECT_EQ(run.out.find("ufile-demo: "), std::string::npos) << help << ": " << run.out;
    EXPECT_NE(run.out.find("usage: "), std::string::npos) << help << ": " << run.out;
  }
  const ToolRun bad = RunTool(Tool(), {"--bogus"}, dir_.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out.rfind("ufile-demo: unknown option --bogus\n", 0), 0u) << bad.out;
  const ToolRun bare = RunTool(Tool(), {"-f"}, dir_.path());
  EXPECT_EQ(bare.exit_code, 2) << bare.out;
  EXPECT_EQ(bare.out.rfind("ufile-demo: -f needs a value\n", 0), 0u) << bare.out;
}

TEST_F(DemoTool, BadSizesAreUsageErrors) {
  for (const char *s : {"-1", "0", "99999999999", "1048577", "abc", "12x", ""}) {
    const ToolRun run = RunTool(Tool(), {"-s", s, "-f", dir_.File("d.bin")}, dir_.path());
    EXPECT_EQ(run.exit_code, 2) << "-s '" << s << "': " << run.out;
    EXPECT_NE(run.out.find("from 1 to 1048576"), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("terminate"), std::string::npos) << run.out;
    EXPECT_FALSE(Exists(dir_.File("d.bin")));
  }
}

TEST_F(DemoTool, AGoodRunVerifiesAndRemovesItsFile) {
  const ToolRun run = RunTool(Tool(), {"-s", "2", "-f", dir_.File("d.bin")}, dir_.path());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("verify: OK"), std::string::npos) << run.out;
  EXPECT_FALSE(Exists(dir_.File("d.bin")));
}

// RunTool with the file size limit at 64 KiB and SIGXFSZ ignored (both
// survive exec), so the write fails with EFBIG after the file exists.
ToolRun RunLimited(const std::string &path, const std::vector<std::string> &args) {
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 64 << 10;
  sighandler_t prev = signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &small);
  ToolRun run = RunTool(path, args);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  return run;
}

TEST_F(DemoTool, AFailedRunSaysWhyAndRemovesItsFile) {
  const ToolRun run = RunLimited(Tool(), {"-s", "1", "-f", dir_.File("d.bin")});
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("cuFileWrite failed: "), std::string::npos) << run.out;
  EXPECT_FALSE(Exists(dir_.File("d.bin"))) << "a failed run left its file";
}

}  // namespace
}  // namespace ufile::test
