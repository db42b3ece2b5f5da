// SPDX-License-Identifier: Apache-2.0
// properties.max_device_pinned_mem_size_kb on a GPU: device memory registered
// with cuFileBufRegister and the staging buffers ufile pins share the bound.
// A registration past it is GPU_MEMORY_PINNING_FAILED; staging past it stays
// unpinned and reads stay byte-exact.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "core/driver.h"
#include "core/runtime.h"
#include "gpu/pinned_budget.h"
#include "support/memory_kinds.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kMiB = 1u << 20;

size_t StagingPinned() {
  Result<Driver::OpGuard> g = Driver::Get().Enter();
  EXPECT_TRUE(g.ok());
  return g.ok() ? g->runtime().pinned().used(PinnedBudget::kStaging) : 0;
}

class PinnedBudgetGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    CloseAll();
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    if (fd_ >= 0) close(fd_);
    CloseAll();
  }
  TempDir dir_;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
};

TEST_F(PinnedBudgetGpu, DeviceRegistrationsPastTheBoundAreRefused) {
  std::unique_ptr<TestMemory> a = AllocateMemory(MemoryKind::kDevice, kMiB);
  std::unique_ptr<TestMemory> b = AllocateMemory(MemoryKind::kDevice, kMiB);
  ASSERT_TRUE(a && b);
  const size_t limit_kb = (StagingPinned() + kMiB + kMiB / 2) / 1024;
  ASSERT_EQ(cuFileDriverSetMaxPinnedMemSize(limit_kb).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileBufRegister(a->ptr(), kMiB, 0).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileBufRegister(b->ptr(), kMiB, 0).err, CU_FILE_GPU_MEMORY_PINNING_FAILED);
  EXPECT_EQ(cuFileBufRegister(b->ptr(), kMiB / 2, 0).err, CU_FILE_SUCCESS) << "what fits";
  EXPECT_EQ(cuFileBufDeregister(b->ptr()).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileBufDeregister(a->ptr()).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileBufRegister(b->ptr(), kMiB, 0).err, CU_FILE_SUCCESS) << "room again";
  EXPECT_EQ(cuFileBufDeregister(b->ptr()).err, CU_FILE_SUCCESS);
}

// A 16 MiB read into device memory leases 4 MiB staging buffers: past the
// bound they stay unpinned, the read is byte-exact, and the bound left for
// registrations is what the pinned staging did not take.
TEST_F(PinnedBudgetGpu, StagingStaysUnderTheBoundAndCounts) {
  constexpr size_t kSize = 16 * kMiB;
  const size_t limit = StagingPinned() + 6 * kMiB;
  ASSERT_EQ(cuFileDriverSetMaxPinnedMemSize(limit / 1024).err, CU_FILE_SUCCESS);
  const std::vector<uint8_t> data = RandomBytes(kSize, 31);
  WriteWholeFile(dir_.File("f"), data);
  fd_ = open(dir_.File("f").c_str(), O_RDONLY);
  ASSERT_GE(fd_, 0);
  ASSERT_EQ(RegisterFd(fd_, &fh_), CU_FILE_SUCCESS);
  std::unique_ptr<TestMemory> mem = AllocateMemory(MemoryKind::kDevice, kSize);
  ASSERT_TRUE(mem);
  ASSERT_EQ(cuFileRead(fh_, mem->ptr(), kSize, 0, 0), static_cast<ssize_t>(kSize));
  EXPECT_EQ(mem->Download(), data);
  const size_t staged = StagingPinned();
  EXPECT_LE(staged, limit);
  std::unique_ptr<TestMemory> reg = AllocateMemory(MemoryKind::kDevice, 8 * kMiB);
  ASSERT_TRUE(reg);
  const size_t room = limit - staged;
  EXPECT_EQ(cuFileBufRegister(reg->ptr(), room + 4096, 0).err, CU_FILE_GPU_MEMORY_PINNING_FAILED);
  if (room > 0) {
    EXPECT_EQ(cuFileBufRegister(reg->ptr(), room, 0).err, CU_FILE_SUCCESS);
    EXPECT_EQ(cuFileBufDeregister(reg->ptr()).err, CU_FILE_SUCCESS);
  }
}

}  // namespace
}  // namespace ufile::test
