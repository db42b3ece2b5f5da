// SPDX-License-Identifier: Apache-2.0
// The host cross-product again on memory a GPU owns or maps: device
// (cuMemAlloc), pinned host (cuMemHostAlloc), managed, and VMM
// (cuMemCreate + cuMemMap) allocations.
#include <gtest/gtest.h>

#include "support/io_cases.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

class GpuIoMatrix : public ::testing::TestWithParam<IoCase> {
 protected:
  static void SetUpTestSuite() { dir_ = new TempDir(); }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir *dir_;
};
TempDir *GpuIoMatrix::dir_ = nullptr;

TEST_P(GpuIoMatrix, WriteThenReadBack) { RunIoCase(GetParam(), dir_->path()); }

INSTANTIATE_TEST_SUITE_P(
    Gpu, GpuIoMatrix,
    ::testing::ValuesIn(CrossProduct({MemoryKind::kDevice, MemoryKind::kPinned,
                                      MemoryKind::kManaged, MemoryKind::kVmm},
                                     {1, 4096, 65536 + 512, 1u << 20, 9u << 20, 64u << 20})),
    [](const auto &p) { return CaseName(p.param); });

}  // namespace
}  // namespace ufile::test
