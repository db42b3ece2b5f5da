// SPDX-License-Identifier: Apache-2.0
// cuFileWrite/cuFileRead on host memory over the cross-product
// {pageable, locked} x alignment x {buffered, O_DIRECT} x 1 B .. 64 MiB.
#include <gtest/gtest.h>

#include "support/io_cases.h"
#include "support/test_util.h"

namespace ufile::test {
namespace {

class IoMatrix : public ::testing::TestWithParam<IoCase> {
 protected:
  static void SetUpTestSuite() { dir_ = new TempDir(); }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir *dir_;
};
TempDir *IoMatrix::dir_ = nullptr;

TEST_P(IoMatrix, WriteThenReadBack) { RunIoCase(GetParam(), dir_->path()); }

INSTANTIATE_TEST_SUITE_P(
    Host, IoMatrix,
    ::testing::ValuesIn(CrossProduct({MemoryKind::kPageable, MemoryKind::kLocked},
                                     {1, 4096, 65536 + 512, 1u << 20, 9u << 20, 64u << 20})),
    [](const auto &p) { return CaseName(p.param); });

}  // namespace
}  // namespace ufile::test
