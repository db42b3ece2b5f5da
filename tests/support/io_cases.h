// SPDX-License-Identifier: Apache-2.0
// The read/write cross-product shared by the CPU and GPU suites: memory kind
// x alignment x buffered/O_DIRECT x size (x registered), random data, every
// byte verified, and the bytes around the request (in the file and in the
// buffer) checked unchanged.
#pragma once

#include <string>
#include <vector>

#include "support/memory_kinds.h"

namespace ufile::test {

enum class Alignment { kAligned, kFileOffset, kSize, kBufferOffset };

struct IoCase {
  MemoryKind mem = MemoryKind::kPageable;
  Alignment align = Alignment::kAligned;
  bool direct = false;
  size_t size = 4096;
  bool registered = false;
};

std::string CaseName(const IoCase &c);
std::vector<IoCase> CrossProduct(const std::vector<MemoryKind> &kinds,
                                 const std::vector<size_t> &sizes);

// Writes then reads back c through cuFileWrite/cuFileRead in dir. Reports
// failures through gtest; skips (GTEST_SKIP) where c cannot run here.
void RunIoCase(const IoCase &c, const std::string &dir);

}  // namespace ufile::test
