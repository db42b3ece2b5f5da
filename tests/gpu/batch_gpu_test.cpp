// SPDX-License-Identifier: Apache-2.0
// cuFileBatchIO* with device buffers: reads into and writes from GPU memory,
// at any size and alignment, mixed in one submission, checked byte for byte;
// grouped reads of a hot O_DIRECT file taken from the page cache through
// the staging slots.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <map>

#include "core/chunk_io.h"
#include "support/batch_run.h"
#include "gpu/stream_fixture.h"

namespace ufile::test {
namespace {

class BatchGpu : public StreamFixture {};

TEST_F(BatchGpu, ReadsAndWritesWithDeviceBuffers) {
  constexpr unsigned kN = 96;
  CUfileHandle_t out = OpenFile("out", std::vector<uint8_t>(kFile, 0));
  // Source of the writes: the upper half of dev_, uploaded from known bytes.
  const std::vector<uint8_t> src = RandomBytes(kDev / 2, 5);
  CU_OK(Cuda().cuMemcpyHtoD(dev_ + kDev / 2, src.data(), src.size()));
  CU_OK(Cuda().cuStreamSynchronize(nullptr));  // a pageable upload may return before it lands
  CUfileBatchHandle_t batch = nullptr;
  ASSERT_EQ(cuFileBatchIOSetUp(&batch, kN).err, CU_FILE_SUCCESS);
  std::vector<CUfileIOParams_t> p(kN);
  size_t pos = 0;
  for (unsigned i = 0; i < kN; ++i) {
    // 4 KiB reads mostly, a few large and odd ones.
    const size_t size = i % 8 == 7 ? (1u << 20) + i : (i % 3 ? 4096 : 4096 - i);
    CUfileIOParams_t &e = p[i];
    e.mode = CUFILE_BATCH;
    e.opcode = i % 4 == 3 ? CUFILE_WRITE : CUFILE_READ;
    e.fh = e.opcode == CUFILE_WRITE ? out : fh_;
    e.u.batch.devPtr_base =
        reinterpret_cast<void *>(dev_ + (e.opcode == CUFILE_WRITE ? kDev / 2 : 0));
    e.u.batch.devPtr_offset = static_cast<off_t>(pos + i % 5);
    e.u.batch.file_offset = static_cast<off_t>(pos + i % 7);  // regions never overlap
    e.u.batch.size = size;
    e.cookie = reinterpret_cast<void *>(uintptr_t{i} + 1);
    pos += size + 64;
  }
  ASSERT_LT(pos, kDev / 2);
  ASSERT_EQ(cuFileBatchIOSubmit(batch, kN, p.data(), 0).err, CU_FILE_SUCCESS);
  std::map<uintptr_t, CUfileIOEvents_t> got;
  std::vector<CUfileIOEvents_t> ev(kN);
  while (got.size() < kN) {
    unsigned nr = kN;
    ASSERT_EQ(cuFileBatchIOGetStatus(batch, 1, &nr, ev.data(), nullptr).err, CU_FILE_SUCCESS);
    for (unsigned i = 0; i < nr; ++i)
      ASSERT_TRUE(got.emplace(reinterpret_cast<uintptr_t>(ev[i].cookie), ev[i]).second);
  }
  cuFileBatchIODestroy(batch);
  const std::vector<uint8_t> written = ReadWholeFile(dir_.File("out"));
  const std::vector<uint8_t> dev = Download(0, kDev / 2);
  for (unsigned i = 0; i < kN; ++i) {
    const CUfileIOParams_t &e = p[i];
    const CUfileIOEvents_t &r = got.at(i + 1);
    ASSERT_EQ(r.status, CUFILE_COMPLETE) << i;
    ASSERT_EQ(r.ret, e.u.batch.size) << i;
    const size_t boff = e.u.batch.devPtr_offset, foff = e.u.batch.file_offset, n = e.u.batch.size;
    if (e.opcode == CUFILE_READ)
      EXPECT_EQ(0, memcmp(dev.data() + boff, data_.data() + foff, n)) << "read " << i;
    else
      EXPECT_EQ(0, memcmp(written.data() + foff, src.data() + boff, n)) << "write " << i;
  }
}

TEST_F(BatchGpu, GroupedReadsOfAHotODirectFileComeFromThePageCache) {
  if (!DirectIoSupported(dir_.path())) GTEST_SKIP() << "O_DIRECT is not supported here";
  constexpr unsigned kN = 32;
  constexpr size_t kEntry = 16 << 10;  // 32 x 16 KiB: within one group's staging
  const int fd = open(dir_.File("data").c_str(), O_RDONLY | O_DIRECT);  // written: hot
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(RegisterFd(fd, &fh), CU_FILE_SUCCESS);
  handles_.push_back(fh);
  std::vector<CUfileIOParams_t> p(kN);
  for (unsigned i = 0; i < kN; ++i) {
    CUfileIOParams_t &e = p[i];
    e.mode = CUFILE_BATCH;
    e.opcode = CUFILE_READ;
    e.fh = fh;
    e.u.batch.devPtr_base = reinterpret_cast<void *>(dev_);
    e.u.batch.devPtr_offset = static_cast<off_t>(i * kEntry);
    e.u.batch.file_offset = static_cast<off_t>(i * 3 * kEntry);
    e.u.batch.size = kEntry;
  }
  const PageCacheReadCounts before = PageCacheReads();
  CUfileBatchHandle_t batch = nullptr;
  ASSERT_EQ(cuFileBatchIOSetUp(&batch, kN).err, CU_FILE_SUCCESS);
  const std::vector<CUfileIOEvents_t> ev = RunBatchParams(batch, p);
  cuFileBatchIODestroy(batch);
  for (const CUfileIOEvents_t &e : ev) {
    ASSERT_EQ(e.status, CUFILE_COMPLETE);
    ASSERT_EQ(e.ret, kEntry);
  }
  for (unsigned i = 0; i < kN; ++i)
    EXPECT_TRUE(DeviceHoldsFile(i * kEntry, i * 3 * kEntry, kEntry)) << "entry " << i;
  const PageCacheReadCounts after = PageCacheReads();
  EXPECT_EQ(after.cached_bytes - before.cached_bytes, kN * kEntry);
  EXPECT_EQ(after.direct_fallbacks, before.direct_fallbacks);
}

}  // namespace
}  // namespace ufile::test
