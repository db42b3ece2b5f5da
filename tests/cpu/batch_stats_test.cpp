// SPDX-License-Identifier: Apache-2.0
// Batch counters of cuFileGetStatsL1 after a known sequence of batch calls
// on host memory: set-up, one mixed submission, status, cancel, destroy.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "support/test_util.h"

namespace ufile::test {
namespace {

TEST(BatchStats, CountersMatchAKnownSequence) {
  if (cuFileUseCount() > 0) cuFileDriverClose();
  ASSERT_EQ(cuFileSetStatsLevel(1).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileStatsReset().err, CU_FILE_SUCCESS);

  TempDir dir;
  const std::string path = dir.File("batch");
  WriteWholeFile(path, RandomBytes(1 << 20, 5));
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_SUCCESS);

  CUfileBatchHandle_t batch = nullptr;
  ASSERT_EQ(cuFileBatchIOSetUp(&batch, 8).err, CU_FILE_SUCCESS);
  std::vector<char> buf(8 * 4096);
  std::vector<CUfileIOParams_t> io(5);
  for (size_t i = 0; i < io.size(); ++i) {
    io[i].mode = CUFILE_BATCH;
    io[i].fh = fh;
    io[i].opcode = i < 3 ? CUFILE_READ : CUFILE_WRITE;  // 3 reads, 2 writes
    io[i].u.batch.devPtr_base = buf.data();
    io[i].u.batch.devPtr_offset = static_cast<off_t>(i * 4096);
    io[i].u.batch.file_offset = static_cast<off_t>(i * 4096);
    io[i].u.batch.size = 4096;
    io[i].cookie = &io[i];
  }
  ASSERT_EQ(cuFileBatchIOSubmit(batch, 5, io.data(), 0).err, CU_FILE_SUCCESS);
  std::vector<CUfileIOEvents_t> ev(8);
  unsigned got = 0;
  while (got < 5) {
    unsigned nr = 8;
    ASSERT_EQ(cuFileBatchIOGetStatus(batch, 1, &nr, ev.data(), nullptr).err, CU_FILE_SUCCESS);
    got += nr;
  }
  ASSERT_EQ(cuFileBatchIOCancel(batch).err, CU_FILE_SUCCESS);
  cuFileBatchIODestroy(batch);
  EXPECT_EQ(cuFileBatchIOSubmit(nullptr, 1, io.data(), 0).err, CU_FILE_INVALID_VALUE);

  CUfileStatsLevel1_t s{};
  ASSERT_EQ(cuFileGetStatsL1(&s).err, CU_FILE_SUCCESS);
  EXPECT_EQ(s.batch_setup_ops.ok, 1u);
  EXPECT_EQ(s.batch_submit_ops.ok, 1u);
  EXPECT_EQ(s.batch_enqueued_ops.ok, 5u);
  EXPECT_EQ(s.batch_processed_ops.ok, 5u);
  EXPECT_EQ(s.batch_processed_ops.err, 0u);
  EXPECT_EQ(s.batch_read_bytes, 3u * 4096);
  EXPECT_EQ(s.batch_write_bytes, 2u * 4096);
  EXPECT_GE(s.batch_complete_ops.ok, 1u);
  EXPECT_EQ(s.batch_cancel_ops.ok, 1u);
  EXPECT_EQ(s.batch_destroy_ops.ok, 1u);
  EXPECT_EQ(s.last_batch_read_bytes, 3u * 4096);
  EXPECT_EQ(s.last_batch_write_bytes, 2u * 4096);

  cuFileHandleDeregister(fh);
  close(fd);
  cuFileSetStatsLevel(0);
  cuFileDriverClose();
}

}  // namespace
}  // namespace ufile::test
