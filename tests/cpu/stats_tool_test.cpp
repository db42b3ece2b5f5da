// SPDX-License-Identifier: Apache-2.0
// ufile-stats reads a live child process's counters: a forked child sets
// level 3 and does host-buffer I/O; ufile-stats -p <child> prints what it
// did, follows it as it does more, and reports it gone once it exits (the
// segment removed) or stale when it died without removing it. Bad option
// values are named; a segment being published is waited for; one naming
// another process is refused; the program name is printed without control
// characters.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "stats/segment.h"
#include "support/test_util.h"
#include "tools/run_tool.h"

#ifndef UFILE_STATS_BIN
#define UFILE_STATS_BIN ""
#endif

namespace ufile::test {
namespace {

std::string Tool() {
  return ToolPath("UFILE_STATS_BIN", UFILE_STATS_BIN);
}

// Whether text holds part, runs of spaces counting as one.
bool Contains(const std::string &text, const std::string &part) {
  return Squeeze(text).find(part) != std::string::npos;
}

// The child: level 3, a file, 5 writes and 3 reads of 4 KiB, one failed read.
// Then it obeys the parent: 'w' writes 10 more and answers, 'q' quits
// normally, 'k' dies without cleaning up.
[[noreturn]] void Child(const std::string &dir, int to_parent, int from_parent) {
  int code = 1;
  if (cuFileSetStatsLevel(3).err == CU_FILE_SUCCESS) {
    int fd = open((dir + "/data").c_str(), O_CREAT | O_RDWR, 0600);
    CUfileDescr_t d;
    std::memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd;
    CUfileHandle_t fh = nullptr;
    std::vector<char> buf(4096, 'x');
    cuFileHandleRegister(&fh, &d);
    for (int i = 0; i < 5; ++i) cuFileWrite(fh, buf.data(), 4096, i * 4096, 0);
    for (int i = 0; i < 3; ++i) cuFileRead(fh, buf.data(), 4096, i * 4096, 0);
    cuFileRead(nullptr, buf.data(), 4096, 0, 0);
    char cmd = 0;
    while (write(to_parent, "r", 1) == 1 && read(from_parent, &cmd, 1) == 1 && cmd == 'w')
      for (int i = 0; i < 10; ++i) cuFileWrite(fh, buf.data(), 4096, 0, 0);
    if (cmd == 'k') _exit(0);  // no atexit: the segment stays behind
    cuFileHandleDeregister(fh);
    close(fd);
    cuFileDriverClose();
    code = 0;
  }
  std::exit(code);  // normal exit: the segment is removed
}

class StatsTool : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Tool().empty()) GTEST_SKIP() << "ufile-stats not built (set UFILE_STATS_BIN)";
    ASSERT_EQ(pipe(up_), 0);
    ASSERT_EQ(pipe(down_), 0);
    std::fflush(nullptr);  // the child must not flush our buffers again
    child_ = fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      close(up_[0]);
      close(down_[1]);
      Child(dir_.path(), up_[1], down_[0]);
    }
    close(up_[1]);
    close(down_[0]);
    ASSERT_TRUE(WaitReady());
  }
  void TearDown() override {
    if (child_ > 0) Finish('q');
    if (child_) shm_unlink(("/ufile-stats-" + Pid()).c_str());
  }
  bool WaitReady() {
    char c = 0;
    return read(up_[0], &c, 1) == 1 && c == 'r';
  }
  // Sends cmd and reaps the child; its exit code.
  int Finish(char cmd) {
    [[maybe_unused]] ssize_t n = write(down_[1], &cmd, 1);
    int status = 0;
    waitpid(child_, &status, 0);
    close(up_[0]);
    close(down_[1]);
    child_ = -child_;  // reaped; the number still names its segment
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string Pid() const { return std::to_string(child_ > 0 ? child_ : -child_); }

  TempDir dir_;
  int up_[2] = {-1, -1}, down_[2] = {-1, -1};
  pid_t child_ = 0;
};

TEST_F(StatsTool, ReadsTheChildsLiveCounters) {
  const ToolRun run = RunTool(Tool(), {"-p", Pid(), "-n", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Contains(run.out, "pid " + Pid() + " (") && Contains(run.out, ") level 3"))
      << run.out;
  EXPECT_TRUE(Contains(run.out, "Write ok 5 err 0 bytes 20480 ")) << run.out;
  EXPECT_TRUE(Contains(run.out, "Read ok 3 err 1 bytes 12288 ")) << run.out;
  EXPECT_TRUE(Contains(run.out, "HandleRegister ok 1 ")) << run.out;
  EXPECT_TRUE(Contains(run.out, "[4, 8) 3 5\n")) << run.out;  // 4 KiB: bucket 3
  EXPECT_NE(run.out.find("PER GPU"), std::string::npos);
  EXPECT_NE(run.out.find("BATCH"), std::string::npos);

  const ToolRun l1 = RunTool(Tool(), {"-p", Pid(), "-l", "1"});
  ASSERT_EQ(l1.exit_code, 0) << l1.out;
  EXPECT_EQ(l1.out.find("SIZE HISTOGRAM"), std::string::npos) << "-l 1: counters only";
  EXPECT_EQ(l1.out.find("PER GPU"), std::string::npos);
}

TEST_F(StatsTool, FollowsTheChildAndSeesItLeave) {
  ASSERT_EQ(write(down_[1], "w", 1), 1);
  ASSERT_TRUE(WaitReady());
  const ToolRun run = RunTool(Tool(), {"-p", Pid(), "-i", "0.05", "-n", "2"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(Contains(run.out, "Write ok 15 err 0")) << run.out;
  EXPECT_TRUE(Contains(run.out, " now ")) << "second sample has rates: " << run.out;
  EXPECT_EQ(Finish('q'), 0);
  struct stat st;
  EXPECT_NE(stat(("/dev/shm" + stats::SegmentName(-child_)).c_str(), &st), 0)
      << "a normal exit removes the segment";
  const ToolRun gone = RunTool(Tool(), {"-p", Pid()});
  EXPECT_EQ(gone.exit_code, 1) << gone.out;
}

TEST_F(StatsTool, ReportsStaleSegmentOfDeadProcess) {
  EXPECT_EQ(Finish('k'), 0);
  const ToolRun run = RunTool(Tool(), {"-p", Pid()});
  EXPECT_EQ(run.exit_code, 3) << run.out;
  EXPECT_NE(run.out.find("stale"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rm /dev/shm/ufile-stats-" + Pid()), std::string::npos) << run.out;
}

// --help and -h print the usage on stdout and exit 0; an unknown option is
// named (exit status 2, usage, as for the other tools and as docs/STATS.md says).
TEST(StatsToolUsage, HelpAndUnknownOptions) {
  if (Tool().empty()) GTEST_SKIP() << "ufile-stats not built";
  for (const char *help : {"--help", "-h"}) {
    const ToolRun run = RunTool(Tool(), {help});
    EXPECT_EQ(run.exit_code, 0) << help << ": " << run.out;
    EXPECT_EQ(run.out.rfind("usage: ufile-stats", 0), 0u) << help << ": " << run.out;
  }
  for (const char *bad : {"--bogus", "-x"}) {
    const ToolRun run = RunTool(Tool(), {bad, "-p", "1"});
    EXPECT_EQ(run.exit_code, 2) << bad << ": " << run.out;
    EXPECT_EQ(run.out.rfind(std::string("ufile-stats: unknown option ") + bad + "\n", 0), 0u)
        << run.out;
  }
}

TEST(StatsToolUsage, RefusesBadArgumentsAndSilentProcesses) {
  if (Tool().empty()) GTEST_SKIP() << "ufile-stats not built";
  EXPECT_EQ(RunTool(Tool(), {}).exit_code, 2);
  EXPECT_EQ(RunTool(Tool(), {"-p", "1", "-l", "4"}).exit_code, 2);
  EXPECT_EQ(RunTool(Tool(), {"-p", "x"}).exit_code, 2);
  const ToolRun self = RunTool(Tool(), {"-p", std::to_string(getpid())});
  EXPECT_EQ(self.exit_code, 1) << "this process never set a level: " << self.out;
  EXPECT_NE(self.out.find("cuFileSetStatsLevel"), std::string::npos) << self.out;
}

}  // namespace
}  // namespace ufile::test

namespace ufile::test {
namespace {

// A copy of the child's segment published under this process's pid, its
// header changed by patch; removed at the end of the scope.
class CopiedSegment {
 public:
  template <class Patch>
  CopiedSegment(const std::string &from_pid, Patch patch, bool fill_later = false)
      : path_("/dev/shm/ufile-stats-" + std::to_string(getpid())) {
    bytes_ = ReadWholeFile("/dev/shm/ufile-stats-" + from_pid);
    EXPECT_GE(bytes_.size(), sizeof(stats::Segment));
    auto *seg = reinterpret_cast<stats::Segment *>(bytes_.data());
    patch(seg->header);
    const int fd = open(path_.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);  // empty, as at creation
    EXPECT_GE(fd, 0);
    close(fd);
    if (!fill_later) Fill();
  }
  ~CopiedSegment() { unlink(path_.c_str()); }
  void Fill() { WriteWholeFile(path_, bytes_); }

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;
};

TEST_F(StatsTool, BadOptionValuesAreNamed) {
  for (const auto &args : std::vector<std::vector<std::string>>{
           {"-p", "x"}, {"-p", Pid(), "-l", "9"}, {"-p", Pid(), "-i", "-1"}, {"-p", Pid(), "-n", "0"}}) {
    const ToolRun run = RunTool(Tool(), args);
    EXPECT_EQ(run.exit_code, 2) << run.out;
    EXPECT_NE(run.out.find("ufile-stats: -" + args[args.size() - 2].substr(1) + " '" +
                           args.back() + "': "),
              std::string::npos)
        << run.out;
  }
}

TEST_F(StatsTool, ASegmentNamingAnotherProcessIsRefused) {
  CopiedSegment copy(Pid(), [](stats::Header &) {});  // still names the child
  const ToolRun run = RunTool(Tool(), {"-p", std::to_string(getpid())});
  EXPECT_EQ(run.exit_code, 5) << run.out;
  EXPECT_NE(run.out.find("names process " + Pid()), std::string::npos) << run.out;
}

TEST_F(StatsTool, ASegmentBeingPublishedIsWaitedForAndItsNameMadePrintable) {
  CopiedSegment copy(
      Pid(),
      [](stats::Header &h) {
        h.pid = getpid();
        std::memcpy(h.comm, "ev\x1b[2Jil\n", 10);
      },
      /*fill_later=*/true);
  std::thread filler([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    copy.Fill();
  });
  const ToolRun run = RunTool(Tool(), {"-p", std::to_string(getpid())});
  filler.join();
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("(ev?[2Jil?)"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find('\x1b'), std::string::npos) << "a control character reached the terminal";
}

}  // namespace
}  // namespace ufile::test
