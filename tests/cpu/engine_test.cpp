// SPDX-License-Identifier: Apache-2.0
// Engine choice and the io_uring engine's own edges: fallback to POSIX when
// io_uring cannot be set up (injected through the seam), forced choices,
// transfers wider than a ring, end of file on O_DIRECT descriptors.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "base/log.h"
#include "core/driver.h"
#include "core/runtime.h"
#include "engine/engine.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

// io_uring setup refused, as seccomp (EPERM) or an old kernel (ENOSYS) would.
class NoUring : public SysOps {
 public:
  explicit NoUring(int err) : err_(err) {}
  int UringQueueInit(unsigned, struct io_uring *, unsigned) override { return -err_; }

 private:
  int err_;
};

std::string EngineInUse() {
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  EXPECT_TRUE(g.ok());
  return g.ok() ? g->runtime().engine().name() : "";
}

class EngineChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Driver::Get().IsOpen()) {
      ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
    }
  }
  void TearDown() override {
    if (Driver::Get().IsOpen()) cuFileDriverClose();
  }
};

TEST_F(EngineChoice, FallsBackToPosixWhenSetupIsRefused) {
  for (int err : {EPERM, ENOSYS}) {
    NoUring faulty(err);
    ScopedSysOps scope(&faulty);
    ScopedEnv env("UFILE_ENGINE", std::nullopt);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    EXPECT_STREQ(EngineInUse().c_str(), "posix") << strerror(err);
    ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  }
}

TEST_F(EngineChoice, ForcedIoUringFallsBackWhenRefused) {
  NoUring faulty(EPERM);
  ScopedSysOps scope(&faulty);
  ScopedEnv env("UFILE_ENGINE", "io_uring");
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_STREQ(EngineInUse().c_str(), "posix");
}

TEST_F(EngineChoice, ConfiguredChoiceIsUsed) {
  {
    ScopedEnv env("UFILE_ENGINE", "thread_pool");
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    EXPECT_STREQ(EngineInUse().c_str(), "posix");
    ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  }
  std::string why;
  if (!MakeUringEngine(8, EngineRegistration{}, &why))
    GTEST_SKIP() << "io_uring unavailable here: " << why;
  ScopedEnv env("UFILE_ENGINE", "io_uring");
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  EXPECT_STREQ(EngineInUse().c_str(), "io_uring");
}

// The io_uring engine's INFO line names the depth its rings are made with:
// the key's range, whatever a Config built in code holds.
TEST_F(EngineChoice, TheLoggedQueueDepthIsTheOneInUse) {
  std::string why;
  if (!MakeUringEngine(8, EngineRegistration{}, &why))
    GTEST_SKIP() << "io_uring unavailable here: " << why;
  TempDir dir;
  const std::pair<size_t, size_t> cases[] = {{2, 4}, {64, 64}, {32768, 4096}};
  for (const auto &[asked, used] : cases) {
    SCOPED_TRACE(asked);
    Config cfg;
    cfg.engine = EngineKind::kIoUring;
    cfg.max_io_queue_depth = asked;
    cfg.log_level = LogLevel::kInfo;
    cfg.log_file_path = dir.File("engine" + std::to_string(asked) + ".log");
    ConfigureLog(cfg);
    std::unique_ptr<Engine> e = MakeEngine(cfg);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->together(), used);
    const std::vector<uint8_t> log = ReadWholeFile(cfg.log_file_path);
    const std::string text(log.begin(), log.end());
    EXPECT_NE(text.find("queue depth " + std::to_string(used) + " per thread"), std::string::npos)
        << text;
  }
  Config quiet;
  quiet.log_file_path = "/dev/null";
  ConfigureLog(quiet);
}

class UringEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    engine_ = MakeUringEngine(4, EngineRegistration{},
                              &why);  // a shallow ring: transfers need several waves
    if (!engine_) GTEST_SKIP() << "io_uring unavailable here: " << why;
  }
  TempDir dir_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(UringEngineTest, WideTransfersAndEndOfFile) {
  const size_t n = (13u << 20) + 4096 * 3;  // 17 pieces over a 4-deep ring
  const std::string path = dir_.File("wide");
  std::vector<uint8_t> data = RandomBytes(n, 7);
  int fd = open(path.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  Result<size_t> w = engine_->Write(fd, data.data(), n, 0, 1, kNoFixedSlot);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*w, n);
  std::vector<uint8_t> back(n + 8192, 0xEE);
  Result<size_t> r = engine_->Read(fd, back.data(), n + 8192, 0, 1, kNoFixedSlot);  // past the end
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, n);
  EXPECT_EQ(0, memcmp(back.data(), data.data(), n));
  EXPECT_EQ(back[n], 0xEE) << "nothing written past end of file";
  close(fd);
}

TEST_F(UringEngineTest, DirectReadEndingInsideABlock) {
  if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "no O_DIRECT in " << dir_.path();
  const size_t n = (3u << 20) + 1000;  // the file ends inside a block
  const std::string path = dir_.File("tail");
  std::vector<uint8_t> data = RandomBytes(n, 8);
  WriteWholeFile(path, data);
  int fd = open(path.c_str(), O_RDONLY | O_DIRECT);
  ASSERT_GE(fd, 0);
  void *buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, 4u << 20), 0);
  Result<size_t> r = engine_->Read(fd, buf, 4u << 20, 0, 4096, kNoFixedSlot);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, n);
  EXPECT_EQ(0, memcmp(buf, data.data(), n));
  free(buf);
  close(fd);
}

TEST_F(UringEngineTest, ErrorsComeBackAsErrno) {
  std::vector<uint8_t> buf(4096);
  Result<size_t> r = engine_->Read(-1, buf.data(), buf.size(), 0, 1, kNoFixedSlot);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is_errno(EBADF)) << r.status().ToString();
}

}  // namespace
}  // namespace ufile::test
