// SPDX-License-Identifier: Apache-2.0
// cuFileBatchIO* with device buffers: reads into and writes from GPU memory,
// at any size and alignment, mixed in one submission, checked byte for byte.
#include <cufile.h>
#include <gtest/gtest.h>

#include <map>

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

}  // namespace
}  // namespace ufile::test
