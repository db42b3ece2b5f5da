// SPDX-License-Identifier: Apache-2.0
// properties.max_device_pinned_mem_size_kb bounds the memory pinned for a
// session (gpu/pinned_budget.h): the staging buffers ufile pins or offers to
// io_uring plus the GPU memory registered with cuFileBufRegister, together.
// Without a GPU the staging pool pins nothing, but every buffer it publishes
// to io_uring counts, so the bound is seen on the published slots.
#include <cufile.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/buffer_registry.h"
#include "core/driver.h"
#include "core/runtime.h"
#include "engine/ring_registry.h"
#include "gpu/pinned_budget.h"
#include "gpu/staging_pool.h"

namespace ufile {
namespace {

constexpr size_t k64K = 64 * 1024;

RegisteredBuffer Device(uintptr_t base, size_t length) {
  RegisteredBuffer b{base, length, 0, MemInfo{}};
  b.mem.kind = MemKind::kDevice;
  return b;
}

TEST(PinnedBudget, ChargesStayAtOrBelowTheLiveLimit) {
  std::atomic<size_t> limit_kb{128};
  PinnedBudget budget(limit_kb);
  EXPECT_EQ(budget.limit_bytes(), 128u * 1024);
  EXPECT_TRUE(budget.TryCharge(PinnedBudget::kStaging, k64K));
  EXPECT_TRUE(budget.TryCharge(PinnedBudget::kRegistered, k64K));
  EXPECT_FALSE(budget.TryCharge(PinnedBudget::kStaging, 1)) << "at the limit";
  EXPECT_FALSE(budget.TryCharge(PinnedBudget::kRegistered, SIZE_MAX));
  EXPECT_EQ(budget.used(PinnedBudget::kStaging), k64K);
  EXPECT_EQ(budget.used(PinnedBudget::kRegistered), k64K);
  EXPECT_EQ(budget.Refusal(PinnedBudget::kStaging, 4096),
            "4096 bytes of staging would pass max_device_pinned_mem_size_kb (128 KiB): pinned "
            "now 65536 bytes of staging and 65536 bytes of registered GPU memory");
  limit_kb = 192;  // cuFileDriverSetMaxPinnedMemSize: later charges see it
  EXPECT_TRUE(budget.TryCharge(PinnedBudget::kStaging, k64K));
  limit_kb = 4;  // lowering frees nothing
  EXPECT_EQ(budget.used(PinnedBudget::kStaging), 2 * k64K);
  budget.Release(PinnedBudget::kStaging, 2 * k64K);
  EXPECT_FALSE(budget.TryCharge(PinnedBudget::kStaging, 4096)) << "registered memory counts";
  budget.Release(PinnedBudget::kRegistered, k64K);
  EXPECT_TRUE(budget.TryCharge(PinnedBudget::kStaging, 4096));
}

TEST(PinnedBudget, RegistrationsPastTheLimitAreRefused) {
  std::atomic<size_t> limit_kb{128};
  PinnedBudget budget(limit_kb);
  BufferRegistry reg(&budget);
  EXPECT_TRUE(reg.Add(Device(0x100000, k64K)).ok());
  // Host memory is the application's: not counted.
  EXPECT_TRUE(reg.Add(RegisteredBuffer{0x900000, 1 << 20, 0, MemInfo{}}).ok());
  ASSERT_TRUE(budget.TryCharge(PinnedBudget::kStaging, k64K / 2));
  Status s = reg.Add(Device(0x200000, k64K));
  EXPECT_EQ(s.code(), CU_FILE_GPU_MEMORY_PINNING_FAILED) << "staging counts too";
  EXPECT_FALSE(reg.Find(0x200000).has_value());
  budget.Release(PinnedBudget::kStaging, k64K / 2);
  EXPECT_TRUE(reg.Add(Device(0x200000, k64K)).ok());
  EXPECT_EQ(budget.used(PinnedBudget::kRegistered), 2 * k64K);
  EXPECT_TRUE(reg.Remove(0x100000).ok());
  EXPECT_EQ(budget.used(PinnedBudget::kRegistered), k64K);
}

// Staging buffers the budget refuses are plain memory, not offered to
// io_uring; those it took are charged until the pool frees them.
TEST(PinnedBudget, StagingPastTheLimitIsNeitherPinnedNorPublished) {
  std::atomic<size_t> limit_kb{128};
  PinnedBudget budget(limit_kb);
  ASSERT_TRUE(budget.TryCharge(PinnedBudget::kRegistered, k64K));
  {
    StagingPool pool({64}, {3}, nullptr, &budget);
    std::vector<StagingLease> held;
    for (int i = 0; i < 3; ++i) {
      Result<StagingLease> l = pool.Lease(k64K);
      ASSERT_TRUE(l.ok());
      ASSERT_TRUE(*l);
      EXPECT_FALSE(l->pinned());
      held.push_back(std::move(*l));
    }
    EXPECT_NE(held[0].fixed(), kNoFixedSlot) << "within the limit: offered to io_uring";
    EXPECT_EQ(held[1].fixed(), kNoFixedSlot) << "past the limit";
    EXPECT_EQ(held[2].fixed(), kNoFixedSlot) << "past the limit";
    EXPECT_EQ(budget.used(PinnedBudget::kStaging), k64K);
    held.clear();
    pool.Release();
    EXPECT_EQ(budget.used(PinnedBudget::kStaging), 0u);
  }
  EXPECT_EQ(budget.used(PinnedBudget::kRegistered), k64K);
}

// In a session, the budget reads the live limit: cuFileDriverSetMaxPinnedMemSize
// bounds the staging buffers allocated after it.
TEST(PinnedBudget, TheSessionsBudgetFollowsTheLiveSetter) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  {
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->runtime().pinned().limit_bytes(), size_t{33554432} * 1024);
    ASSERT_EQ(cuFileDriverSetMaxPinnedMemSize(8).err, CU_FILE_SUCCESS);
    EXPECT_EQ(g->runtime().pinned().limit_bytes(), 8u * 1024);
    Result<StagingLease> l = g->runtime().staging().Lease(4u << 20);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->fixed(), kNoFixedSlot) << "a 4 MiB buffer is past 8 KiB";
    EXPECT_LE(g->runtime().pinned().used(PinnedBudget::kStaging), 8u * 1024);
  }
  EXPECT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
}

}  // namespace
}  // namespace ufile
