// SPDX-License-Identifier: Apache-2.0
// Per-GPU statistics (level 3) after I/O into device memory: the row of the
// buffer's GPU counts its reads, writes, bytes, unaligned requests and
// registered bytes, carries the GPU's UUID, and host I/O adds nothing to it.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "gpu/cuda_api.h"
#include "support/memory_kinds.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kSize = 1 << 20;

class StatsGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GpuAvailable()) GTEST_SKIP() << "no GPU: " << GpuUnavailableReason();
    ASSERT_EQ(cuFileSetStatsLevel(3).err, CU_FILE_SUCCESS);
    fd_ = open(dir_.File("data").c_str(), O_CREAT | O_RDWR, 0600);  // buffered: POSIX path
    ASSERT_GE(fd_, 0);
    CUfileDescr_t d;
    std::memset(&d, 0, sizeof d);
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    d.handle.fd = fd_;
    ASSERT_EQ(cuFileHandleRegister(&fh_, &d).err, CU_FILE_SUCCESS);
    dev_ = AllocateMemory(MemoryKind::kDevice, kSize, 0);
    ASSERT_NE(dev_, nullptr);
    dev_->Upload(RandomBytes(kSize, 3));
    ASSERT_EQ(cuFileStatsReset().err, CU_FILE_SUCCESS);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    cuFileSetStatsLevel(0);
  }
  TempDir dir_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  std::unique_ptr<TestMemory> dev_;
};

TEST_F(StatsGpuTest, DeviceIoFillsTheGpuRow) {
  char *p = dev_->ptr();
  ASSERT_EQ(cuFileBufRegister(p, kSize, 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileWrite(fh_, p, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(cuFileWrite(fh_, p, 4096 + 100, kSize + 512, 0), 4096 + 100);  // unaligned
  EXPECT_EQ(cuFileRead(fh_, p, kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(cuFileRead(fh_, p, 4096 + 100, kSize + 512, 0), 4096 + 100);
  EXPECT_EQ(cuFileRead(fh_, p, 8192, kSize, 0), 512 + 4096 + 100) << "short at end of file";
  std::vector<uint8_t> host(4096);
  EXPECT_EQ(cuFileRead(fh_, host.data(), 4096, 0, 0), 4096);  // host memory: no GPU row

  CUfileStatsLevel3_t s;
  ASSERT_EQ(cuFileGetStatsL3(&s).err, CU_FILE_SUCCESS);
  EXPECT_GE(s.num_gpus, 1u);
  const CUfilePerGpuStats_t &g = s.per_gpu_stats[0];
  EXPECT_EQ(g.n_total_writes, 2u);
  EXPECT_EQ(g.writes_bytes, kSize + 4096 + 100);
  EXPECT_EQ(g.n_unaligned_writes, 1u);
  EXPECT_EQ(g.n_posix_writes, 2u) << "a descriptor without O_DIRECT goes through the page cache";
  EXPECT_EQ(g.n_total_reads, 3u);
  EXPECT_EQ(g.read_bytes, kSize + 2 * (4096 + 100) + 512);
  EXPECT_EQ(g.n_unaligned_reads, 1u);
  EXPECT_EQ(g.n_reads_err + g.n_writes_err, 0u);
  EXPECT_GT(g.read_bw_bytes_per_sec, 0u);
  EXPECT_LE(g.read_utilization, 100u);
  EXPECT_EQ(g.reg_bytes, kSize);
  EXPECT_EQ(s.detailed.basic.read_ops.ok, 4u) << "host reads count in the global counters";

  CUdevice dev = 0;
  CUuuid uuid;
  ASSERT_EQ(Cuda().cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ASSERT_EQ(Cuda().cuDeviceGetUuid(&uuid, dev), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(g.uuid, uuid.bytes, sizeof g.uuid), 0);
  for (uint32_t i = 1; i < 16; ++i) EXPECT_EQ(s.per_gpu_stats[i].n_total_reads, 0u);

  ASSERT_EQ(cuFileBufDeregister(p).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileGetStatsL3(&s).err, CU_FILE_SUCCESS);
  EXPECT_EQ(s.per_gpu_stats[0].reg_bytes, 0u);
}

TEST_F(StatsGpuTest, FailedDeviceReadCountsAnError) {
  // Past the end of the allocation: refused before the engine, counted globally.
  const ssize_t r = cuFileRead(fh_, dev_->ptr(), 2 * kSize, 0, 0);
  EXPECT_LT(r, 0);
  CUfileStatsLevel1_t s;
  ASSERT_EQ(cuFileGetStatsL1(&s).err, CU_FILE_SUCCESS);
  EXPECT_EQ(s.read_ops.err, 1u);
  EXPECT_EQ(s.read_ops.ok, 0u);
}

}  // namespace
}  // namespace ufile::test
