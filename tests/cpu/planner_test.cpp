// SPDX-License-Identifier: Apache-2.0
// plan/planner: how one request is cut into chunks. Exact chunk lists for the
// shapes that matter (buffered, O_DIRECT aligned / unaligned head / tail /
// both / inside one block / size 1 / exact multiples), the staged flag, and
// the invariants over many random shapes: chunks cover [0, size) once, in
// file order; O_DIRECT chunks are aligned in offset and length.
#include "plan/planner.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ufile {
namespace {

constexpr size_t kA = 4096;
constexpr size_t kMiB = 1 << 20;

// What a test expects of one chunk.
struct Want {
  off_t file_off;
  size_t len;
  bool direct;
  bool staged;
};

std::vector<Chunk> Chunks(const Plan &p) {
  std::vector<Chunk> out;
  for (size_t i = 0; i < p.count(); ++i) out.push_back(p.at(i));
  return out;
}

PlanInput Input(off_t file_off, size_t size, bool direct, size_t chunk = kMiB,
                uintptr_t mem = 0x10000000, bool needs_copy = false) {
  PlanInput in;
  in.file_off = file_off;
  in.size = size;
  in.fd_direct = direct;
  in.align = kA;
  in.chunk_size = chunk;
  in.mem_addr = mem;
  in.needs_copy = needs_copy;
  return in;
}

void ExpectChunks(const PlanInput &in, const std::vector<Want> &want) {
  const Plan p(in);
  const std::vector<Chunk> got = Chunks(p);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "chunk " << i);
    EXPECT_EQ(got[i].file_off, want[i].file_off);
    EXPECT_EQ(got[i].len, want[i].len);
    EXPECT_EQ(got[i].buf_off, static_cast<size_t>(want[i].file_off - in.file_off));
    EXPECT_EQ(got[i].direct, want[i].direct);
    EXPECT_EQ(got[i].staged, want[i].staged);
    EXPECT_EQ(p.start_of(i), got[i].buf_off);
  }
}

// The invariants every plan must hold, whatever its shape.
void CheckInvariants(const PlanInput &in) {
  SCOPED_TRACE(::testing::Message()
               << "off " << in.file_off << " size " << in.size << " direct " << in.fd_direct
               << " chunk " << in.chunk_size << " mem 0x" << std::hex << in.mem_addr);
  const Plan p(in);
  size_t covered = 0;
  for (size_t i = 0; i < p.count(); ++i) {
    const Chunk c = p.at(i);
    ASSERT_EQ(c.buf_off, covered) << "chunk " << i << " leaves a gap or overlaps";
    ASSERT_GT(c.len, 0u);
    ASSERT_LE(c.len, in.chunk_size);
    ASSERT_EQ(c.file_off, in.file_off + static_cast<off_t>(c.buf_off));
    if (!in.fd_direct) {
      ASSERT_FALSE(c.direct);
    }
    if (c.direct) {
      ASSERT_EQ(static_cast<size_t>(c.file_off) % in.align, 0u);
      ASSERT_EQ(c.len % in.align, 0u);
    }
    if (in.needs_copy) {
      ASSERT_TRUE(c.staged);
    }
    // Unstaged O_DIRECT chunks read straight into the caller's memory.
    if (c.direct && !c.staged) {
      ASSERT_EQ((in.mem_addr + c.buf_off) % in.align, 0u);
    }
    if (!c.direct && !in.needs_copy) {
      ASSERT_FALSE(c.staged);
    }
    covered += c.len;
  }
  ASSERT_EQ(covered, in.size);
}

TEST(Planner, EmptyRequestHasNoChunks) {
  EXPECT_EQ(Plan(Input(0, 0, false)).count(), 0u);
  EXPECT_EQ(Plan(Input(123, 0, true)).count(), 0u);
}

TEST(Planner, BufferedIsOneRegionChunkedByChunkSize) {
  ExpectChunks(Input(100, 2 * kMiB + 5, false), {{100, kMiB, false, false},
                                                 {100 + kMiB, kMiB, false, false},
                                                 {100 + 2 * kMiB, 5, false, false}});
}

TEST(Planner, BufferedSmallerThanAChunkIsOneChunk) {
  ExpectChunks(Input(7, 1, false), {{7, 1, false, false}});
  ExpectChunks(Input(0, kMiB, false), {{0, kMiB, false, false}});
}

TEST(Planner, ZeroChunkSizeMeansOneMiB) {
  ExpectChunks(Input(0, kMiB + 1, false, 0), {{0, kMiB, false, false}, {kMiB, 1, false, false}});
}

TEST(Planner, DirectAlignedIsAllDirect) {
  ExpectChunks(Input(kA, 3 * kA, true, 2 * kA),
               {{kA, 2 * kA, true, false}, {3 * kA, kA, true, false}});
}

TEST(Planner, DirectExactMultipleOfChunkSize) {
  ExpectChunks(Input(0, 4 * kA, true, 2 * kA),
               {{0, 2 * kA, true, false}, {2 * kA, 2 * kA, true, false}});
}

TEST(Planner, DirectUnalignedHeadIsBuffered) {
  // [100, 4096) buffered, then [4096, 12288) direct; the memory is aligned
  // where the middle starts.
  ExpectChunks(Input(100, 3 * kA - 100, true, kMiB, 0x10000000 - (kA - 100)),
               {{100, kA - 100, false, false}, {kA, 2 * kA, true, false}});
}

TEST(Planner, DirectUnalignedTailIsBuffered) {
  ExpectChunks(Input(0, 2 * kA + 10, true), {{0, 2 * kA, true, false}, {2 * kA, 10, false, false}});
}

TEST(Planner, DirectUnalignedHeadAndTail) {
  // The head ends on a block boundary, where the memory is aligned too.
  ExpectChunks(Input(kA - 1, 1 + 2 * kA + 1, true, kA, 0x10000000 - 1),
               {{kA - 1, 1, false, false},
                {kA, kA, true, false},
                {2 * kA, kA, true, false},
                {3 * kA, 1, false, false}});
}

TEST(Planner, RequestInsideOneBlockIsAllBuffered) {
  ExpectChunks(Input(100, 200, true), {{100, 200, false, false}});
  ExpectChunks(Input(kA + 1, kA - 2, true), {{kA + 1, kA - 2, false, false}});
}

TEST(Planner, SizeOneIsOneBufferedChunk) {
  ExpectChunks(Input(0, 1, true), {{0, 1, false, false}});
  ExpectChunks(Input(kA - 1, 1, true), {{kA - 1, 1, false, false}});
  ExpectChunks(Input(5 * kA, 1, true), {{5 * kA, 1, false, false}});
}

TEST(Planner, UnalignedRequestEndingOnABlockBoundaryHasNoTail) {
  ExpectChunks(Input(10, 2 * kA - 10, true, kMiB, 0x10000000 - (kA - 10)),
               {{10, kA - 10, false, false}, {kA, kA, true, false}});
}

TEST(Planner, NeedsCopyStagesEveryChunk) {
  ExpectChunks(Input(100, 2 * kA, true, kMiB, 0x10000000, true),
               {{100, kA - 100, false, true}, {kA, kA, true, true}, {2 * kA, 100, false, true}});
  ExpectChunks(Input(0, 5, false, kMiB, 0x10000000, true), {{0, 5, false, true}});
}

TEST(Planner, UnalignedHostMemoryStagesOnlyTheDirectMiddle) {
  // Aligned file range, memory off by 8: O_DIRECT cannot read into it.
  ExpectChunks(Input(0, 2 * kA, true, kA, 0x10000008), {{0, kA, true, true}, {kA, kA, true, true}});
  // The head shifts the middle's memory: aligned memory + 100-byte head is
  // unaligned at the middle, memory 100 bytes before a boundary is aligned.
  ExpectChunks(Input(kA - 100, kA + 100, true, kMiB, 0x10000000),
               {{kA - 100, 100, false, false}, {kA, kA, true, true}});
  ExpectChunks(Input(kA - 100, kA + 100, true, kMiB, 0x10000000 - 100),
               {{kA - 100, 100, false, false}, {kA, kA, true, false}});
}

TEST(Planner, BufferedNeverStagesHostMemory) {
  ExpectChunks(Input(0, 3, false, kMiB, 0x10000001), {{0, 3, false, false}});
}

TEST(Planner, HandPickedShapesHoldTheInvariants) {
  for (bool direct : {false, true})
    for (off_t off : {off_t{0}, off_t{1}, off_t{511}, off_t{4095}, off_t{4096}, off_t{1} << 40})
      for (size_t size : {size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, 3 * kMiB + 17})
        for (uintptr_t mem : {uintptr_t{0x10000000}, uintptr_t{0x10000001}})
          CheckInvariants(Input(off, size, direct, 64 * kA, mem));
}

TEST(Planner, RandomShapesHoldTheInvariants) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 3000; ++iter) {
    PlanInput in;
    in.fd_direct = rng() % 2;
    in.align = size_t{512} << (rng() % 4);  // 512 .. 4096
    in.chunk_size = in.align * (1 + rng() % 64);
    in.file_off = static_cast<off_t>(rng() % (size_t{1} << 32));
    in.size = 1 + rng() % (4 * kMiB);
    in.mem_addr = 0x10000000 + rng() % 8192;
    in.needs_copy = rng() % 4 == 0;
    CheckInvariants(in);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace ufile
