// SPDX-License-Identifier: Apache-2.0
// The stats API on host buffers: exact counters after a known sequence at
// each level, histogram buckets, reset, stop/start, level changes while
// running, the published segment, and the level taken from the config.
#include "observe/observer.h"
#include "stats/stats.h"

#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "stats/reader.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

CUfileOpError SetLevel(int level) {
  return cuFileSetStatsLevel(level).err;
}

CUfileStatsLevel3_t GetL3() {
  CUfileStatsLevel3_t s;
  std::memset(&s, 0xab, sizeof s);
  EXPECT_EQ(cuFileGetStatsL3(&s).err, CU_FILE_SUCCESS);
  return s;
}

CUfileStatsLevel1_t GetL1() {
  CUfileStatsLevel1_t s;
  std::memset(&s, 0xab, sizeof s);
  EXPECT_EQ(cuFileGetStatsL1(&s).err, CU_FILE_SUCCESS);
  return s;
}

// A file without O_DIRECT, registered, and a host buffer.
class StatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(SetLevel(3), CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileStatsStart().err, CU_FILE_SUCCESS);
    fd_ = open(dir_.File("data").c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd_, 0);
    CUfileDescr_t d;
    std::memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    buf_ = RandomBytes(2 << 20, 7);
    ASSERT_EQ(cuFileWrite(fh_, buf_.data(), buf_.size(), 0, 0), static_cast<ssize_t>(buf_.size()));
    ASSERT_EQ(cuFileStatsReset().err, CU_FILE_SUCCESS);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    cuFileSetStatsLevel(0);
  }
  ssize_t Write(size_t size, off_t off = 0) { return cuFileWrite(fh_, buf_.data(), size, off, 0); }
  ssize_t Read(size_t size, off_t off = 0) { return cuFileRead(fh_, buf_.data(), size, off, 0); }

  TempDir dir_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  std::vector<uint8_t> buf_;
};

TEST(StatsLevel, ValidAndInvalidLevels) {
  for (int level : {0, 1, 2, 3}) {
    EXPECT_EQ(SetLevel(level), CU_FILE_SUCCESS);
    int got = -1;
    EXPECT_EQ(cuFileGetStatsLevel(&got).err, CU_FILE_SUCCESS);
    EXPECT_EQ(got, level);
  }
  for (int bad : {-1, 4, 100, -2147483647 - 1}) EXPECT_EQ(SetLevel(bad), CU_FILE_INVALID_VALUE);
  int got = -1;
  EXPECT_EQ(cuFileGetStatsLevel(&got).err, CU_FILE_SUCCESS);
  EXPECT_EQ(got, 3) << "a refused level leaves the level unchanged";
  EXPECT_EQ(cuFileGetStatsLevel(nullptr).err, CU_FILE_INVALID_VALUE);
  SetLevel(0);
}

// Each getter needs a level at least its own; NULL is refused at any level.
TEST(StatsLevel, GettersNeedTheirLevel) {
  CUfileStatsLevel1_t l1;
  CUfileStatsLevel2_t l2;
  CUfileStatsLevel3_t l3;
  for (int level : {0, 1, 2, 3}) {
    SetLevel(level);
    EXPECT_EQ(cuFileGetStatsL1(&l1).err, level >= 1 ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileGetStatsL2(&l2).err, level >= 2 ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileGetStatsL3(&l3).err, level >= 3 ? CU_FILE_SUCCESS : CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileGetStatsL1(nullptr).err, CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileGetStatsL2(nullptr).err, CU_FILE_INVALID_VALUE);
    EXPECT_EQ(cuFileGetStatsL3(nullptr).err, CU_FILE_INVALID_VALUE);
  }
  SetLevel(0);
  EXPECT_EQ(cuFileStatsStart().err, CU_FILE_INVALID_VALUE) << "Start needs a level";
  EXPECT_EQ(cuFileStatsStop().err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileStatsReset().err, CU_FILE_SUCCESS);
}

TEST(StatsHistogram, Buckets) {
  const struct {
    uint64_t size;
    int bucket;
  } kCases[] = {
      {0, 0},           {1, 0},           {1023, 0},     {1024, 1},
      {2047, 1},        {2048, 2},        {4095, 2},     {4096, 3},
      {8191, 3},        {8192, 4},        {1 << 20, 11}, {(1 << 20) + 1, 11},
      {1ULL << 40, 31}, {1ULL << 50, 31}, {~0ULL, 31},
  };
  for (const auto &c : kCases) EXPECT_EQ(stats::HistBucket(c.size), c.bucket) << c.size;
}

TEST_F(StatsTest, ExactCountersAtLevel1) {
  ASSERT_EQ(SetLevel(1), CU_FILE_SUCCESS);
  EXPECT_EQ(Write(4096), 4096);
  EXPECT_EQ(Write(4096, 4096), 4096);
  EXPECT_EQ(Write(100, 8192), 100);
  EXPECT_EQ(Read(4096), 4096);
  EXPECT_EQ(Read(1000, 5), 1000);
  EXPECT_EQ(Read(4096, (2 << 20) - 96), 96) << "short read at end of file counts its bytes";
  EXPECT_LT(cuFileRead(reinterpret_cast<CUfileHandle_t>(0x1234), buf_.data(), 10, 0, 0), 0);
  EXPECT_LT(cuFileWrite(fh_, nullptr, 10, 0, 0), 0);
  EXPECT_EQ(Read(0), 0) << "a zero-size request is not counted";
  EXPECT_EQ(cuFileBufRegister(buf_.data(), 8192, 0).err, CU_FILE_SUCCESS);
  EXPECT_NE(cuFileBufRegister(buf_.data(), 8192, 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileBufDeregister(buf_.data()).err, CU_FILE_SUCCESS);
  EXPECT_NE(cuFileBufDeregister(buf_.data()).err, CU_FILE_SUCCESS);
  cuFileHandleDeregister(reinterpret_cast<CUfileHandle_t>(0x5678));

  const CUfileStatsLevel1_t s = GetL1();
  EXPECT_EQ(s.write_ops.ok, 3u);
  EXPECT_EQ(s.write_ops.err, 1u);
  EXPECT_EQ(s.read_ops.ok, 3u);
  EXPECT_EQ(s.read_ops.err, 1u);
  EXPECT_EQ(s.write_bytes, 4096u + 4096u + 100u);
  EXPECT_EQ(s.read_bytes, 4096u + 1000u + 96u);
  EXPECT_EQ(s.buf_register_ops.ok, 1u);
  EXPECT_EQ(s.buf_register_ops.err, 1u);
  EXPECT_EQ(s.buf_deregister_ops.ok, 1u);
  EXPECT_EQ(s.buf_deregister_ops.err, 1u);
  EXPECT_EQ(s.hdl_register_ops.ok, 0u) << "registered before the reset";
  EXPECT_EQ(s.hdl_deregister_ops.err, 1u);
  EXPECT_EQ(s.read_lat_avg_us, s.read_lat_sum_us / 3) << "avg = sum / ok (within rounding)";
  EXPECT_GT(s.read_bw_bytes_per_sec, 0u);
  EXPECT_GT(s.write_ops_per_sec, 0u);
  EXPECT_EQ(s.batch_submit_ops.ok, 0u);
}

TEST_F(StatsTest, HistogramsAtLevel2) {
  ASSERT_EQ(SetLevel(2), CU_FILE_SUCCESS);
  for (size_t size : {1, 1023, 1024, 4096, 4097, 8192, 1 << 20})
    EXPECT_EQ(Write(size), ssize_t(size));
  for (size_t size : {512, 2048, 2048}) EXPECT_EQ(Read(size), ssize_t(size));
  CUfileStatsLevel2_t s;
  ASSERT_EQ(cuFileGetStatsL2(&s).err, CU_FILE_SUCCESS);
  uint64_t want_w[32] = {}, want_r[32] = {};
  want_w[0] = 2, want_w[1] = 1, want_w[3] = 2, want_w[4] = 1, want_w[11] = 1;
  want_r[0] = 1, want_r[2] = 2;
  for (int b = 0; b < 32; ++b) {
    EXPECT_EQ(s.write_size_kb_hist[b], want_w[b]) << "write bucket " << b;
    EXPECT_EQ(s.read_size_kb_hist[b], want_r[b]) << "read bucket " << b;
  }
  EXPECT_EQ(s.basic.write_ops.ok, 7u);
}

TEST_F(StatsTest, ResetZeroesAndKeepsLevel) {
  EXPECT_EQ(Write(4096), 4096);
  EXPECT_EQ(Read(4096), 4096);
  ASSERT_EQ(cuFileStatsReset().err, CU_FILE_SUCCESS);
  const CUfileStatsLevel3_t s = GetL3();
  const CUfileStatsLevel1_t &b = s.detailed.basic;
  EXPECT_EQ(b.read_ops.ok + b.write_ops.ok + b.read_bytes + b.write_bytes, 0u);
  EXPECT_EQ(b.read_lat_sum_us + b.read_bw_bytes_per_sec + b.read_ops_per_sec, 0u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(s.detailed.read_size_kb_hist[i], 0u);
  int level = 0;
  cuFileGetStatsLevel(&level);
  EXPECT_EQ(level, 3);
  EXPECT_EQ(Read(4096), 4096);
  EXPECT_EQ(GetL1().read_ops.ok, 1u) << "counting goes on after a reset";
}

TEST_F(StatsTest, StopPausesStartResumes) {
  EXPECT_EQ(Write(4096), 4096);
  ASSERT_EQ(cuFileStatsStop().err, CU_FILE_SUCCESS);
  EXPECT_EQ(Write(4096), 4096);
  EXPECT_EQ(Write(4096), 4096);
  EXPECT_EQ(GetL1().write_ops.ok, 1u) << "stopped: readable, not counting";
  ASSERT_EQ(cuFileStatsStart().err, CU_FILE_SUCCESS);
  EXPECT_EQ(Write(4096), 4096);
  EXPECT_EQ(GetL1().write_ops.ok, 2u);
}

TEST_F(StatsTest, LevelChangesWhileRunning) {
  auto hist4k = [] {
    CUfileStatsLevel2_t s;
    EXPECT_EQ(cuFileGetStatsL2(&s).err, CU_FILE_SUCCESS);
    return s.write_size_kb_hist[3];
  };
  ASSERT_EQ(SetLevel(2), CU_FILE_SUCCESS);
  Write(4096), Write(4096);
  EXPECT_EQ(hist4k(), 2u);
  ASSERT_EQ(SetLevel(1), CU_FILE_SUCCESS);
  Write(4096), Write(4096), Write(4096);
  CUfileStatsLevel2_t l2;
  EXPECT_EQ(cuFileGetStatsL2(&l2).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(GetL1().write_ops.ok, 5u);
  ASSERT_EQ(SetLevel(0), CU_FILE_SUCCESS);
  Write(4096);
  ASSERT_EQ(SetLevel(2), CU_FILE_SUCCESS);
  EXPECT_EQ(GetL1().write_ops.ok, 5u) << "level 0 counted nothing; counters survived it";
  EXPECT_EQ(hist4k(), 2u) << "level 1 kept no histogram";
  Write(4096);
  EXPECT_EQ(hist4k(), 3u);
  EXPECT_EQ(GetL1().write_ops.ok, 6u);
}

// Many threads on one handle: the sharded counters lose nothing.
TEST_F(StatsTest, ExactUnderConcurrency) {
  constexpr int kThreads = 8, kOps = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint8_t> mine(512, static_cast<uint8_t>(t));
      for (int i = 0; i < kOps; ++i) {
        cuFileWrite(fh_, mine.data(), mine.size(), t * 512, 0);
        cuFileRead(fh_, mine.data(), mine.size(), t * 512, 0);
      }
    });
  for (std::thread &th : threads) th.join();
  const CUfileStatsLevel3_t s = GetL3();
  EXPECT_EQ(s.detailed.basic.write_ops.ok, uint64_t{kThreads * kOps});
  EXPECT_EQ(s.detailed.basic.read_bytes, uint64_t{kThreads * kOps * 512});
  EXPECT_EQ(s.detailed.read_size_kb_hist[0], uint64_t{kThreads * kOps});
}

TEST_F(StatsTest, HostMemoryHasNoPerGpuRow) {
  Write(4096), Read(4096);
  const CUfileStatsLevel3_t s = GetL3();
  for (const CUfilePerGpuStats_t &g : s.per_gpu_stats)
    EXPECT_EQ(g.n_total_reads + g.n_total_writes + g.read_bytes + g.writes_bytes, 0u);
}

// While the level is above 0 the counters are in /dev/shm, same user only.
TEST_F(StatsTest, PublishedSegmentMatchesApi) {
  const std::string path = "/dev/shm" + stats::SegmentName(getpid());
  Write(4096), Write(100), Read(4096);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, getuid());
  const stats::Sample sample = stats::ReadSample(getpid());
  ASSERT_EQ(sample.kind, stats::Sample::Kind::kOk) << sample.detail;
  EXPECT_EQ(sample.pid, getpid());
  EXPECT_EQ(sample.totals.level, 3u);
  CUfileStatsLevel3_t from_shm;
  stats::FillLevel3(sample.totals, &from_shm);
  const CUfileStatsLevel3_t from_api = GetL3();
  EXPECT_EQ(from_shm.detailed.basic.write_ops.ok, 2u);
  EXPECT_EQ(std::memcmp(&from_shm.detailed, &from_api.detailed, sizeof from_api.detailed), 0);
  ASSERT_EQ(SetLevel(0), CU_FILE_SUCCESS);
  EXPECT_NE(stat(path.c_str(), &st), 0) << "level 0 removes the segment";
  EXPECT_EQ(stats::ReadSample(getpid()).kind, stats::Sample::Kind::kAbsent);
  ASSERT_EQ(SetLevel(1), CU_FILE_SUCCESS);
  EXPECT_EQ(stat(path.c_str(), &st), 0) << "and a level above 0 publishes it again";
  EXPECT_EQ(GetL1().write_ops.ok, 2u) << "with the counters so far";
  observe::DriverClosed();
  EXPECT_NE(stat(path.c_str(), &st), 0) << "driver close removes the segment";
}

// A forked child counts into its own memory, never into its parent's segment.
TEST_F(StatsTest, ForkedChildDoesNotWriteParentSegment) {
  Write(4096);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 0; i < 10; ++i) stats::Count(stats::kHandleRegister, true);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(GetL1().hdl_register_ops.ok, 0u);
  EXPECT_EQ(stats::ReadSample(getpid()).totals.ops[stats::kHandleRegister][0], 0u);
}

// profile.cufile_stats and profile.nvtx apply when a driver session starts,
// unless the program set a level with cuFileSetStatsLevel. Each case runs in
// a fresh process (threadsafe death test: re-executed) so that no earlier
// cuFileSetStatsLevel of this binary interferes. Exit code: level + 8 * NVTX,
// or 99 when the I/O of the session was not counted as expected.
int ConfigChild(const std::string &json, int api_level, size_t staged_level) {
  TempDir dir;
  if (!json.empty()) {
    WriteTextFile(dir.File("cufile.json"), json);
    setenv("CUFILE_ENV_PATH_JSON", dir.File("cufile.json").c_str(), 1);
  }
  if (api_level >= 0) cuFileSetStatsLevel(api_level);
  if (staged_level) cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, staged_level);
  if (cuFileDriverOpen().err != CU_FILE_SUCCESS) return 98;
  int fd = open(dir.File("data").c_str(), O_CREAT | O_RDWR, 0600);
  CUfileDescr_t d;
  std::memset(&d, 0, sizeof d);
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  if (cuFileHandleRegister(&fh, &d).err != CU_FILE_SUCCESS) return 97;
  std::vector<uint8_t> buf(4096, 1);
  if (cuFileWrite(fh, buf.data(), buf.size(), 0, 0) != 4096) return 96;
  int level = -1;
  cuFileGetStatsLevel(&level);
  CUfileStatsLevel1_t l1;
  const bool counted = cuFileGetStatsL1(&l1).err == CU_FILE_SUCCESS && l1.write_ops.ok == 1 &&
                       l1.hdl_register_ops.ok == 1;
  if (level > 0 && !counted) return 99;
  const int code = level + (observe::NvtxOn() ? 8 : 0);
  cuFileHandleDeregister(fh);
  cuFileDriverClose();
  return code;
}

class StatsConfig : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(StatsConfig, ProfileKeysSetLevelAndNvtxAtOpen) {
  EXPECT_EXIT(std::exit(ConfigChild(R"({"profile": {"cufile_stats": 2, "nvtx": true}})", -1, 0)),
              ::testing::ExitedWithCode(2 + 8), "");
}

TEST_F(StatsConfig, ApiLevelBeforeOpenWinsOverConfig) {
  EXPECT_EXIT(std::exit(ConfigChild(R"({"profile": {"cufile_stats": 2}})", 1, 0)),
              ::testing::ExitedWithCode(1), "");
}

TEST_F(StatsConfig, StagedParameterSetsLevel) {
  EXPECT_EXIT(std::exit(ConfigChild("", -1, 3)), ::testing::ExitedWithCode(3), "");
}

TEST_F(StatsConfig, DefaultIsOff) {
  EXPECT_EXIT(std::exit(ConfigChild("", -1, 0)), ::testing::ExitedWithCode(0), "");
}

// The binary carries the USDT probes (readelf -n lists them as stapsdt notes).
TEST(StatsTrace, UsdtProbesPresent) {
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(exe)), {});
  for (const char *probe : {"read__start", "read__done", "write__start", "write__done"})
    EXPECT_NE(bytes.find(probe), std::string::npos) << probe;
  EXPECT_NE(bytes.find("stapsdt"), std::string::npos);
}

}  // namespace
}  // namespace ufile::test
