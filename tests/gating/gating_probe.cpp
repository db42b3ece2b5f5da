// SPDX-License-Identifier: Apache-2.0
// A GPU test binary for gating_test.sh: one test that runs and one that
// skips, under the GPU tests' main (support/gpu_test_main.cpp).
#include <gtest/gtest.h>

TEST(GatingProbe, Runs) { SUCCEED(); }

TEST(GatingProbe, Skips) { GTEST_SKIP() << "a skip the gating must see"; }
