// SPDX-License-Identifier: Apache-2.0
// The tests' view of a search's tree: its levels, which two searches from
// the same root must share whatever parents they chose.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "validate.h"

namespace g500 {

// Each vertex's level in parent's tree (-1 unreached); a test failure if
// parent is not a tree rooted at root.
inline std::vector<int32_t> Levels(const Csr &g, uint64_t root,
                                   const std::vector<int64_t> &parent) {
  std::vector<int32_t> level;
  const Validation v = TreeLevels(g, root, parent, &level);
  EXPECT_TRUE(v.ok()) << v.msg;
  return level;
}

}  // namespace g500
