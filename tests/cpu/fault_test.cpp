// SPDX-License-Identifier: Apache-2.0
// Faults injected through the SysOps seam into requests split into several
// chunks (8 MiB in 1 MiB chunks, 4 participants; buffered writes have one):
// EIO, EINTR, EAGAIN, short transfers, ENOSPC, EBADF at chunk k of n, and
// failures of fstat, F_GETFL and the reopen of the buffered descriptor. For
// each: the exact API result, and no byte outside the request changed, in the
// file or in the caller's buffer (a write never changes its source buffer).
// Every table runs on both engines: on the POSIX one the faults hit
// pread/pwrite; on io_uring they are written into the completions the engine
// reaps (its buffered writes, and the POSIX loop that finishes a short or
// EAGAIN piece, still call pwrite/pread). One test checks the fallback when
// io_uring cannot be set up.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/driver.h"
#include "core/runtime.h"
#include "gpu/cuda_api.h"
#include "support/faulty_sys_ops.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kFile = 9 * kMiB + 4321;
constexpr size_t kSize = 8 * kMiB;  // the request: 8 chunks of max_direct_io_size
constexpr off_t kOff = 12345;       // unaligned: O_DIRECT requests get a head and a tail
constexpr size_t kGuard = 8192;
// Where the request's memory starts: with kOff's 4039-byte head, the O_DIRECT
// middle lands on an aligned address (no bounce buffer).
constexpr size_t kBufOff = kGuard + 57;

using Op = FaultySysOps::Op;
using Action = FaultySysOps::Action;
using Fault = FaultySysOps::Fault;

// A byte of chunk k of the request (chunk 0 is the head with O_DIRECT).
off_t InChunk(size_t k) {
  return kOff + static_cast<off_t>(k * kMiB) + 1000;
}

struct Outcome {
  ssize_t ret;
  int err;
};

// {O_DIRECT, io_uring engine}.
class FaultTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  // Direct reads of this hot file would come from the page cache, past the
  // faults: they are tested with O_DIRECT here (page_cache_read_test has theirs).
  ScopedEnv cache_off_{"UFILE_PAGE_CACHE_READS", "0"};
  void SetUp() override {
    direct_ = std::get<0>(GetParam());
    uring_ = std::get<1>(GetParam());
    if (direct_ && !DirectIoSupported(dir_.path()))
      GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
    CloseAll();  // staged parameters apply at the next open
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 1024).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_IO_THREADS, 4).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_EXECUTION_MAX_REQUEST_PARALLELISM, 4).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, uring_).err, CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
    if (uring_ && EngineName() != "io_uring")
      GTEST_SKIP() << "io_uring is not usable here (the engine fell back to POSIX)";
    file_ = RandomBytes(kFile, 1);
    WriteWholeFile(dir_.File("f"), file_);
    fd_ = ::open(dir_.File("f").c_str(), O_RDWR | (direct_ ? O_DIRECT : 0));
    ASSERT_GE(fd_, 0);
    mem_ = static_cast<uint8_t *>(std::aligned_alloc(4096, (kMemSize + 4095) / 4096 * 4096));
    ASSERT_NE(mem_, nullptr);
    mem0_ = RandomBytes(kMemSize, 2);
    std::memcpy(mem_, mem0_.data(), kMemSize);
    scope_ = std::make_unique<ScopedSysOps>(&ops_);
    ASSERT_EQ(Register(&fh_), CU_FILE_SUCCESS);
  }
  void TearDown() override {
    if (fh_) cuFileHandleDeregister(fh_);
    CloseAll();  // closes the buffered descriptors while ops_ is installed
    scope_.reset();
    if (fd_ >= 0) ::close(fd_);
    std::free(mem_);
  }
  static std::string EngineName() {
    Result<Driver::OpGuard> g = Driver::Get().Enter();
    return g.ok() ? g->runtime().engine().name() : "";
  }
  CUfileOpError Register(CUfileHandle_t *fh) { return RegisterFd(fd_, fh); }
  // Both start from the buffer's known contents.
  Outcome Read(size_t size = kSize, off_t off = kOff) {
    std::memcpy(mem_, mem0_.data(), kMemSize);
    errno = 0;
    const ssize_t r = cuFileRead(fh_, mem_, size, off, kBufOff);
    return {r, errno};
  }
  Outcome Write(size_t size = kSize, off_t off = kOff) {
    std::memcpy(mem_, mem0_.data(), kMemSize);
    errno = 0;
    const ssize_t r = cuFileWrite(fh_, mem_, size, off, kBufOff);
    return {r, errno};
  }
  // Bytes of the buffer outside [kBufOff, kBufOff + size) are as before.
  void ExpectGuards(size_t size = kSize) {
    EXPECT_EQ(0, std::memcmp(mem_, mem0_.data(), kBufOff)) << "bytes before the request changed";
    EXPECT_EQ(0, std::memcmp(mem_ + kBufOff + size, mem0_.data() + kBufOff + size,
                             kMemSize - kBufOff - size))
        << "bytes after the request changed";
  }
  void ExpectReadOk(Outcome o, size_t size = kSize, off_t off = kOff) {
    ASSERT_EQ(o.ret, static_cast<ssize_t>(size));
    EXPECT_EQ(0, std::memcmp(mem_ + kBufOff, file_.data() + off, size)) << "wrong bytes read";
    ExpectGuards(size);
  }
  void ExpectReadFailed(Outcome o, int err, size_t size = kSize) {
    EXPECT_EQ(o.ret, -1);
    EXPECT_EQ(o.err, err) << std::strerror(o.err);
    ExpectGuards(size);
    EXPECT_TRUE(ReadWholeFile(dir_.File("f")) == file_) << "a read changed the file";
  }
  void ExpectWriteOk(Outcome o, size_t size = kSize, off_t off = kOff) {
    ASSERT_EQ(o.ret, static_cast<ssize_t>(size));
    std::memcpy(file_.data() + off, mem0_.data() + kBufOff, size);
    EXPECT_TRUE(ReadWholeFile(dir_.File("f")) == file_) << "file differs after the write";
    EXPECT_EQ(0, std::memcmp(mem_, mem0_.data(), kMemSize)) << "a write changed its source";
  }
  void ExpectWriteFailed(Outcome o, int err, size_t size = kSize, off_t off = kOff) {
    EXPECT_EQ(o.ret, -1);
    EXPECT_EQ(o.err, err) << std::strerror(o.err);
    EXPECT_EQ(0, std::memcmp(mem_, mem0_.data(), kMemSize)) << "a write changed its source";
    const std::vector<uint8_t> now = ReadWholeFile(dir_.File("f"));
    ASSERT_EQ(now.size(), file_.size()) << "a failed write changed the file size";
    EXPECT_EQ(0, std::memcmp(now.data(), file_.data(), off)) << "bytes before the range changed";
    EXPECT_EQ(0,
              std::memcmp(now.data() + off + size, file_.data() + off + size, kFile - off - size))
        << "bytes after the range changed";
    file_ = now;  // the range itself is unspecified after a failed write
  }

  static constexpr size_t kMemSize = kBufOff + kSize + kGuard;
  TempDir dir_;
  bool direct_ = false;
  bool uring_ = false;
  std::vector<uint8_t> file_, mem0_;
  uint8_t *mem_ = nullptr;
  int fd_ = -1;
  CUfileHandle_t fh_ = nullptr;
  FaultySysOps ops_;
  std::unique_ptr<ScopedSysOps> scope_;
};

TEST_P(FaultTest, NoFaultIsByteExactAndSplitIntoChunks) {
  ExpectReadOk(Read());
  EXPECT_GE(ops_.calls(Op::kPread), 8) << "the request was not split into chunks";
  ExpectWriteOk(Write());
  EXPECT_GE(ops_.calls(Op::kPwrite), 8);
  EXPECT_EQ(ops_.fired(), 0);
}

TEST_P(FaultTest, EioOnReadAtChunkK) {
  for (size_t k : {size_t{0}, size_t{3}, size_t{7}}) {
    SCOPED_TRACE(::testing::Message() << "chunk " << k);
    FaultySysOps ops;
    ops.Arm({Op::kPread, InChunk(k)});
    ScopedSysOps s(&ops);
    ExpectReadFailed(Read(), EIO);
    EXPECT_EQ(ops.fired(), 1);
  }
}

TEST_P(FaultTest, EioOnWriteAtChunkK) {
  ops_.Arm({Op::kPwrite, InChunk(5)});
  ExpectWriteFailed(Write(), EIO);
  EXPECT_EQ(ops_.fired(), 1);
}

TEST_P(FaultTest, EioOnTheKthCall) {
  ops_.Arm({Op::kPread, -1, /*at_call=*/5});
  ExpectReadFailed(Read(), EIO);
  ops_.Arm({Op::kPwrite, -1, /*at_call=*/3});
  ExpectWriteFailed(Write(), EIO);
  EXPECT_EQ(ops_.fired(), 2);
}

TEST_P(FaultTest, TheFirstFailingChunkInFileOrderWins) {
  ops_.Arm({Op::kPread, InChunk(2), 0, 1, Action::kErrno, EIO});
  ops_.Arm({Op::kPread, InChunk(6), 0, 1, Action::kErrno, EBADF});
  ExpectReadFailed(Read(), EIO);
}

TEST_P(FaultTest, EintrIsRetriedAndTheResultComplete) {
  ops_.Arm({Op::kPread, InChunk(4), 0, 1, Action::kErrno, EINTR});
  ExpectReadOk(Read());
  ops_.Arm({Op::kPwrite, InChunk(1), 0, 1, Action::kErrno, EINTR});
  ExpectWriteOk(Write());
  EXPECT_EQ(ops_.fired(), 2);
}

TEST_P(FaultTest, EagainIsRetried) {
  ops_.Arm({Op::kPread, InChunk(0), 0, 3, Action::kErrno, EAGAIN});
  ExpectReadOk(Read());
  ops_.Arm({Op::kPwrite, InChunk(7), 0, 3, Action::kErrno, EAGAIN});
  ExpectWriteOk(Write());
  EXPECT_EQ(ops_.fired(), 6);
}

TEST_P(FaultTest, EagainForeverFailsWithEagain) {
  ops_.Arm({Op::kPread, InChunk(2), 0, 1 << 30, Action::kErrno, EAGAIN});
  ExpectReadFailed(Read(), EAGAIN);
}

TEST_P(FaultTest, ShortTransfersAreContinued) {
  // The first chunk (the head with O_DIRECT), a middle one, the last (the tail).
  for (off_t at : {kOff + 100, kOff + static_cast<off_t>(4 * kMiB) + 100,
                   kOff + static_cast<off_t>(kSize) - 10}) {
    SCOPED_TRACE(::testing::Message() << "short transfer at " << at);
    FaultySysOps ops;
    ops.Arm({Op::kPread, at, 0, 1, Action::kShort});
    ops.Arm({Op::kPwrite, at, 0, 1, Action::kShort});
    ScopedSysOps s(&ops);
    ExpectReadOk(Read());
    ExpectWriteOk(Write());
    EXPECT_EQ(ops.fired(), 2);
  }
}

TEST_P(FaultTest, UnalignedShortReadOnODirectFinishesBuffered) {
  if (!direct_) GTEST_SKIP() << "only O_DIRECT descriptors stop at an unaligned position";
  ops_.Arm({Op::kPread, InChunk(3) - 900, 0, 1, Action::kShortUnaligned});
  ExpectReadOk(Read());
  EXPECT_EQ(ops_.fired(), 1);
}

TEST_P(FaultTest, EnospcOnWrite) {
  ops_.Arm({Op::kPwrite, InChunk(6), 0, 1, Action::kErrno, ENOSPC});
  ExpectWriteFailed(Write(), ENOSPC);
  EXPECT_EQ(ops_.fired(), 1);
}

TEST_P(FaultTest, EbadfOnReadAndWrite) {
  ops_.Arm({Op::kPread, InChunk(1), 0, 1, Action::kErrno, EBADF});
  ExpectReadFailed(Read(), EBADF);
  ops_.Arm({Op::kPwrite, InChunk(2), 0, 1, Action::kErrno, EBADF});
  ExpectWriteFailed(Write(), EBADF);
  EXPECT_EQ(ops_.fired(), 2);
}

TEST_P(FaultTest, SmallRequestOnTheCallingThread) {
  // Below min_io_threshold: one participant, one chunk.
  ops_.Arm({Op::kPread, kOff + 10, 0, 1, Action::kErrno, EIO});
  ExpectReadFailed(Read(5000), EIO, 5000);
  ExpectReadOk(Read(5000), 5000);
}

TEST_P(FaultTest, RegistrationFailuresOfTheSyscalls) {
  cuFileHandleDeregister(fh_);
  fh_ = nullptr;
  CUfileHandle_t fh = reinterpret_cast<CUfileHandle_t>(0x1234);
  for (int err : {EIO, EBADF, ENOMEM}) {
    ops_.fstat_err = err;
    EXPECT_EQ(Register(&fh), CU_FILE_INVALID_VALUE) << "fstat errno " << err;
  }
  ops_.fstat_err = 0;
  ops_.getflags_err = EIO;
  EXPECT_EQ(Register(&fh), CU_FILE_INVALID_VALUE) << "F_GETFL failing";
  ops_.getflags_err = 0;
  EXPECT_EQ(fh, reinterpret_cast<CUfileHandle_t>(0x1234));
  ASSERT_EQ(Register(&fh_), CU_FILE_SUCCESS) << "a failed registration left state behind";
  ExpectReadOk(Read());
}

TEST_P(FaultTest, BufferedReopenFailing) {
  ops_.open_err = EMFILE;
  if (!direct_) {
    // Without O_DIRECT the handle's own description serves every piece.
    ExpectReadOk(Read());
    EXPECT_EQ(ops_.fired(), 0);
    return;
  }
  // Aligned O_DIRECT requests do not need the buffered descriptor ...
  ExpectReadOk(Read(kSize, 4 * 4096), kSize, 4 * 4096);
  EXPECT_EQ(ops_.fired(), 0);
  // ... the unaligned head and tail do.
  ExpectReadFailed(Read(), EMFILE);
  ExpectWriteFailed(Write(), EMFILE);
  EXPECT_GE(ops_.fired(), 2);
  // A later request retries the reopen.
  ops_.open_err = 0;
  ExpectReadOk(Read());
  ExpectWriteOk(Write());
}

TEST_P(FaultTest, UringUnavailableFallsBackToPosix) {
  // Reopen with io_uring preferred while its setup fails: the driver opens
  // on the POSIX engine, whose pread/pwrite go through the seam.
  cuFileHandleDeregister(fh_);
  fh_ = nullptr;
  CloseAll();
  ops_.uring_err = ENOSYS;
  ASSERT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 1024).err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, true).err, CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  ASSERT_EQ(Register(&fh_), CU_FILE_SUCCESS);
  ExpectReadOk(Read());
  ExpectWriteOk(Write());
  EXPECT_GE(ops_.calls(Op::kPread), 8);
  EXPECT_GE(ops_.calls(Op::kPwrite), 8);
  ops_.Arm({Op::kPread, InChunk(2)});
  ExpectReadFailed(Read(), EIO);
  EXPECT_EQ(ops_.fired(), 1);
}

INSTANTIATE_TEST_SUITE_P(Fd, FaultTest, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto &p) {
                           return std::string(std::get<0>(p.param) ? "Direct" : "Buffered") +
                                  (std::get<1>(p.param) ? "Uring" : "Posix");
                         });

// Records the flags of every open through the seam (the buffered reopen).
class RecordingSysOps : public SysOps {
 public:
  int Open(const char *path, int flags, mode_t mode) override {
    flags_seen = flags;
    return SysOps::Open(path, flags, mode);
  }
  std::atomic<int> flags_seen{-1};
};

TEST(BufferedReopen, KeepsTheDescriptorsSyncFlags) {
  // The unaligned edges of an O_DIRECT write go through a reopened buffered
  // descriptor. With O_SYNC / O_DSYNC the caller expects them on stable
  // storage when cuFileWrite returns, so the reopen must keep those flags.
  TempDir dir;
  if (!DirectIoSupported(dir.path())) GTEST_SKIP() << "O_DIRECT is not supported";
  WriteWholeFile(dir.File("f"), RandomBytes(16384, 1));
  for (int sync : {O_DSYNC, O_SYNC}) {
    SCOPED_TRACE(sync == O_SYNC ? "O_SYNC" : "O_DSYNC");
    CloseAll();
    const int fd = ::open(dir.File("f").c_str(), O_RDWR | O_DIRECT | sync);
    ASSERT_GE(fd, 0);
    CUfileHandle_t fh = nullptr;
    ASSERT_EQ(RegisterFd(fd, &fh), CU_FILE_SUCCESS);
    RecordingSysOps ops;
    {
      ScopedSysOps scope(&ops);
      const std::vector<uint8_t> src = RandomBytes(100, 2);
      EXPECT_EQ(cuFileWrite(fh, src.data(), 100, 10, 0), 100);
      cuFileHandleDeregister(fh);
      CloseAll();  // closes the reopened descriptor while ops is installed
    }
    ::close(fd);
    const int flags = ops.flags_seen.load();
    ASSERT_NE(flags, -1) << "no buffered reopen happened";
    EXPECT_EQ(flags & sync, sync) << "reopen flags 0" << std::oct << flags;
    EXPECT_EQ(flags & O_DIRECT, 0);
    EXPECT_EQ(flags & O_ACCMODE, O_RDWR);
  }
}

// Copy faults (ScopedCudaOverride on cuMemcpyHtoDAsync, ...) need device
// memory; tests/gpu injects them. What holds on every machine: host memory
// never reaches the copy entry points, with or without a GPU, and without
// one the driver opens and says why CUDA is unusable.
std::atomic<int> g_copy_calls{0};
CUresult CountedHtoD(CUdeviceptr, const void *, size_t, CUstream) {
  ++g_copy_calls;
  return CUDA_ERROR_UNKNOWN;
}
CUresult CountedDtoH(void *, CUdeviceptr, size_t, CUstream) {
  ++g_copy_calls;
  return CUDA_ERROR_UNKNOWN;
}

TEST(CudaSeam, HostMemoryNeverReachesTheCopyEntryPoints) {
  CloseAll();
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  if (!Cuda().available) {
    EXPECT_FALSE(Cuda().why_unavailable.empty());
  }
  ScopedCudaOverride htod(&CudaApi::cuMemcpyHtoDAsync, &CountedHtoD);
  ScopedCudaOverride dtoh(&CudaApi::cuMemcpyDtoHAsync, &CountedDtoH);
  TempDir dir;
  const std::vector<uint8_t> data = RandomBytes(3 << 20, 9);
  WriteWholeFile(dir.File("f"), data);
  const int fd = ::open(dir.File("f").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(RegisterFd(fd, &fh), CU_FILE_SUCCESS);
  std::vector<uint8_t> buf(data.size());
  EXPECT_EQ(cuFileRead(fh, buf.data(), buf.size(), 0, 0), static_cast<ssize_t>(buf.size()));
  EXPECT_TRUE(buf == data);
  EXPECT_EQ(cuFileWrite(fh, buf.data(), buf.size(), 4096, 0), static_cast<ssize_t>(buf.size()));
  EXPECT_EQ(g_copy_calls.load(), 0);
  cuFileHandleDeregister(fh);
  ::close(fd);
  CloseAll();
}

}  // namespace
}  // namespace ufile::test
