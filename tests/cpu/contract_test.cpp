// SPDX-License-Identifier: Apache-2.0
// Contract details of docs/API.md that real clients meet: argument refusals
// that do not open the library, the NULL stream storing every refusal in
// *bytes_p, the live setters' ranges being the parameter API's, and a
// registered descriptor that changes behind the handle (O_APPEND set with
// fcntl, or closed and its number reused by another file): a handle with its
// own description goes on with its own file, one whose fd is checked
// refuses; never a byte written into another file, in batches too (checked
// once per handle and direction for a group of entries); host memory
// refused where properties.allow_system_memory is false.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/batch_run.h"
#include "support/test_util.h"
#include "sys/sys_ops.h"

namespace ufile::test {
namespace {

const auto kForged = reinterpret_cast<CUfileHandle_t>(0x1230);

CUfileOpError Register(int fd, CUfileHandle_t *fh) {
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  return cuFileHandleRegister(fh, &d).err;
}

class Contract : public ::testing::Test {
 protected:
  void SetUp() override { CloseAll(); }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    CloseAll();
  }
  int Open(const std::string &name, int flags) {
    const int fd = ::open(dir_.File(name).c_str(), flags | O_CREAT, 0600);
    EXPECT_GE(fd, 0) << name << ": " << std::strerror(errno);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  TempDir dir_;
  std::vector<int> fds_;
};

// ---- refusals that need no session do not open one --------------------------

TEST_F(Contract, BarSizeWithoutGpuDoesNotOpen) {
  size_t kb = 7;
  const CUfileOpError e = cuFileGetBARSizeInKB(0, &kb).err;
  if (e == CU_FILE_SUCCESS) GTEST_SKIP() << "a GPU is visible: the no-GPU refusal is not reached";
  EXPECT_EQ(e, CU_FILE_DEVICE_NOT_FOUND);
  EXPECT_EQ(kb, 7u);
  EXPECT_EQ(cuFileUseCount(), 0) << "a refusal must not open the library";
}

TEST_F(Contract, DeregisteringWhatCannotBeRegisteredDoesNotOpen) {
  cuFileHandleDeregister(nullptr);
  EXPECT_EQ(cuFileUseCount(), 0);
  cuFileHandleDeregister(kForged);
  EXPECT_EQ(cuFileUseCount(), 0) << "nothing is registered while closed";
  std::vector<char> mem(4096);
  EXPECT_EQ(cuFileBufDeregister(mem.data()).err, CU_FILE_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuFileUseCount(), 0);
  // Open, the same calls still refuse (and the session stays).
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  cuFileHandleDeregister(kForged);
  EXPECT_EQ(cuFileBufDeregister(mem.data()).err, CU_FILE_MEMORY_NOT_REGISTERED);
  EXPECT_EQ(cuFileUseCount(), 1);
}

// ---- the NULL stream stores every refusal -----------------------------------

TEST_F(Contract, NullStreamStoresEveryRefusalInBytes) {
  const int ro = Open("f", O_RDONLY);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(ro, &fh), CU_FILE_SUCCESS);
  std::vector<char> buf(4096);
  size_t size = 4096;
  off_t off = 0, boff = 0;
  ssize_t bytes = 12345;
  EXPECT_EQ(cuFileReadAsync(kForged, buf.data(), &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_HANDLE_NOT_REGISTERED);
  EXPECT_EQ(bytes, -static_cast<ssize_t>(CU_FILE_HANDLE_NOT_REGISTERED));
  bytes = 12345;
  EXPECT_EQ(cuFileWriteAsync(fh, buf.data(), &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_INVALID_FILE_OPEN_FLAG)
      << "a read-only handle";
  EXPECT_EQ(bytes, -1) << "EBADF, as cuFileWrite returns it";
  cuFileHandleDeregister(fh);
}

// ---- the live setters take what the parameter API takes ---------------------

TEST_F(Contract, LiveSettersRefuseWhatTheParameterApiRefuses) {
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileDrvProps_t before{}, after{};
  ASSERT_EQ(cuFileDriverGetProperties(&before).err, CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileDriverSetMaxDirectIOSize(6).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
  EXPECT_EQ(cuFileDriverSetPollMode(true, 6).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
  EXPECT_EQ(cuFileDriverSetMaxCacheSize(4098).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
  EXPECT_EQ(cuFileDriverSetMaxPinnedMemSize(4097).err, CU_FILE_DRIVER_UNSUPPORTED_LIMIT);
  ASSERT_EQ(cuFileDriverGetProperties(&after).err, CU_FILE_SUCCESS);
  EXPECT_EQ(after.nvfs.max_direct_io_size, before.nvfs.max_direct_io_size);
  EXPECT_EQ(after.nvfs.poll_thresh_size, before.nvfs.poll_thresh_size);
  EXPECT_EQ(after.nvfs.dcontrolflags, before.nvfs.dcontrolflags);
  EXPECT_EQ(after.max_device_cache_size, before.max_device_cache_size);
  EXPECT_EQ(after.max_device_pinned_mem_size, before.max_device_pinned_mem_size);
  size_t v = 0;
  EXPECT_EQ(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, 6).err,
            CU_FILE_DRIVER_ALREADY_OPEN);
  ASSERT_EQ(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_MAX_DIRECT_IO_SIZE_KB, &v).err,
            CU_FILE_SUCCESS);
  EXPECT_EQ(v % 4, 0u);
  EXPECT_EQ(cuFileDriverSetMaxDirectIOSize(8).err, CU_FILE_SUCCESS);
}

// ---- the descriptor changes behind the handle -------------------------------

// A handle writes through its own file description: O_APPEND set on the
// caller's descriptor does not move its writes.
TEST_F(Contract, AppendSetWithFcntlAfterRegistrationLeavesWritesAtTheirOffset) {
  const std::vector<uint8_t> data = RandomBytes(8192, 3);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = Open("f", O_RDWR);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_APPEND), 0);
  const std::vector<uint8_t> src = RandomBytes(100, 4);
  EXPECT_EQ(cuFileWrite(fh, src.data(), 100, 0, 0), 100);
  std::vector<uint8_t> want = data;
  std::memcpy(want.data(), src.data(), 100);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), want) << "the write landed at offset 0, not appended";
  cuFileHandleDeregister(fh);
}

// Where ufile could not reopen the file, the handle writes through the
// caller's descriptor and refuses writes once it has O_APPEND.
TEST_F(Contract, AppendSetWithFcntlIsRefusedWhereTheFdIsChecked) {
  const std::vector<uint8_t> data = RandomBytes(8192, 3);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = Open("f", O_RDWR);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(RegisterFdChecked(fd, &fh), CU_FILE_SUCCESS);
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_APPEND), 0);
  const std::vector<uint8_t> src = RandomBytes(100, 4);
  EXPECT_EQ(cuFileWrite(fh, src.data(), 100, 0, 0),
            -static_cast<ssize_t>(CU_FILE_INVALID_FILE_OPEN_FLAG))
      << "pwrite would append at the end instead of writing at offset 0";
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data);
  std::vector<uint8_t> back(100);
  EXPECT_EQ(cuFileRead(fh, back.data(), 100, 0, 0), 100) << "reads are unaffected";
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_APPEND), 0);
  EXPECT_EQ(cuFileWrite(fh, src.data(), 100, 0, 0), 100);
  std::vector<uint8_t> want = data;
  std::memcpy(want.data(), src.data(), 100);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), want);
  cuFileHandleDeregister(fh);
}

// ---- slab arrays: what NVIDIA's library takes -------------------------------

TEST_F(Contract, SlabArraysUpTo16GiBAreAcceptedAndReadBack) {
  const size_t sizes[] = {4096, 65536, 1048576, 16777216}, counts[] = {10, 5, 3, 2};
  ASSERT_EQ(cuFileSetParameterPosixPoolSlabArray(sizes, counts, 4).err, CU_FILE_SUCCESS);
  size_t s[4] = {}, c[4] = {};
  ASSERT_EQ(cuFileGetParameterPosixPoolSlabArray(s, c, 4).err, CU_FILE_SUCCESS);
  EXPECT_EQ(std::vector<size_t>(s, s + 4), std::vector<size_t>(sizes, sizes + 4));
  EXPECT_EQ(std::vector<size_t>(c, c + 4), std::vector<size_t>(counts, counts + 4));
  EXPECT_EQ(cuFileUseCount(), 0) << "slabs are allocated on use, not now";
}

// ---- properties.allow_system_memory ----------------------------------------

TEST_F(Contract, SystemMemoryRefusedWhenNotAllowed) {
  const std::vector<uint8_t> data = RandomBytes(8192, 8);
  WriteWholeFile(dir_.File("f"), data);
  ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY, false).err,
            CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  bool allowed = true;
  ASSERT_EQ(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_SYSTEM_MEMORY, &allowed).err,
            CU_FILE_SUCCESS);
  EXPECT_FALSE(allowed);
  const int fd = Open("f", O_RDWR);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  std::vector<uint8_t> buf(8192, 0xee);
  constexpr ssize_t kRefused = -static_cast<ssize_t>(CU_FILE_CUDA_MEMORY_TYPE_INVALID);
  EXPECT_EQ(cuFileRead(fh, buf.data(), buf.size(), 0, 0), kRefused);
  EXPECT_EQ(cuFileWrite(fh, buf.data(), buf.size(), 0, 0), kRefused);
  EXPECT_EQ(buf, std::vector<uint8_t>(8192, 0xee));
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data);
  EXPECT_EQ(cuFileBufRegister(buf.data(), buf.size(), 0).err, CU_FILE_CUDA_MEMORY_TYPE_INVALID);
  size_t size = 4096;
  off_t off = 0, boff = 0;
  ssize_t bytes = 0;
  EXPECT_EQ(cuFileReadAsync(fh, buf.data(), &size, &off, &boff, &bytes, nullptr).err,
            CU_FILE_CUDA_MEMORY_TYPE_INVALID);
  cuFileHandleDeregister(fh);
  // The next session is back to the default: host memory allowed.
  CloseAll();
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  EXPECT_EQ(cuFileRead(fh, buf.data(), buf.size(), 0, 0), 8192);
  EXPECT_EQ(buf, data);
  cuFileHandleDeregister(fh);
}

// Parameters: O_DIRECT, and whether the handle has its own description
// (else it was registered with the reopening refused: RegisterFdChecked).
class ReusedDescriptor : public Contract,
                         public ::testing::WithParamInterface<std::tuple<bool, bool>> {
 protected:
  bool direct() const { return std::get<0>(GetParam()); }
  bool own() const { return std::get<1>(GetParam()); }
  CUfileOpError RegisterOld(int fd, CUfileHandle_t *fh) {
    return own() ? Register(fd, fh) : RegisterFdChecked(fd, fh);
  }
};

// fd N registered, closed by the application, N given to another file: the
// old handle goes on reading and writing its own file where it has its own
// description, else refuses I/O (-1/EBADF, as for a closed descriptor);
// never a byte of the new file is touched; N registers anew for it.
TEST_P(ReusedDescriptor, OldHandleNeverReachesTheNewFile) {
  if (direct() && !DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  const std::vector<uint8_t> a = RandomBytes(16384, 5), b = RandomBytes(16384, 6);
  WriteWholeFile(dir_.File("a"), a);
  WriteWholeFile(dir_.File("b"), b);
  const int flags = O_RDWR | (direct() ? O_DIRECT : 0);
  const int fd = ::open(dir_.File("a").c_str(), flags);
  ASSERT_GE(fd, 0);
  CUfileHandle_t old = nullptr;
  ASSERT_EQ(RegisterOld(fd, &old), CU_FILE_SUCCESS);
  void *mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, 4096, 16384), 0);
  std::memset(mem, 0x5a, 16384);
  // Unaligned edges open the buffered descriptor before the close.
  ASSERT_EQ(cuFileWrite(old, mem, 100, 10, 0), 100);
  std::vector<uint8_t> a2 = a;
  std::memset(a2.data() + 10, 0x5a, 100);
  ::close(fd);
  const int fd2 = ::open(dir_.File("b").c_str(), flags);
  ASSERT_EQ(fd2, fd) << "the lowest free number is reused";
  fds_.push_back(fd2);
  if (own()) {
    std::memset(mem, 0x6b, 16384);
    EXPECT_EQ(cuFileWrite(old, mem, 8192 + 100, 0, 0), 8192 + 100);
    std::memset(a2.data(), 0x6b, 8192 + 100);
    std::memset(mem, 0, 16384);
    EXPECT_EQ(cuFileRead(old, mem, 8192 + 100, 4096, 0), 8192 + 100);
    EXPECT_EQ(std::memcmp(mem, a2.data() + 4096, 8192 + 100), 0) << "read from its own file";
  } else {
    errno = 0;
    EXPECT_EQ(cuFileWrite(old, mem, 8192 + 100, 0, 0), -1);
    EXPECT_EQ(errno, EBADF);
    errno = 0;
    EXPECT_EQ(cuFileRead(old, mem, 8192 + 100, 0, 0), -1);
    EXPECT_EQ(errno, EBADF);
  }
  EXPECT_EQ(ReadWholeFile(dir_.File("a")), a2);
  EXPECT_EQ(ReadWholeFile(dir_.File("b")), b);
  CUfileHandle_t fresh = nullptr;
  ASSERT_EQ(Register(fd2, &fresh), CU_FILE_SUCCESS) << "the stale registration is not in the way";
  cuFileHandleDeregister(old);
  CUfileHandle_t again = nullptr;
  EXPECT_EQ(Register(fd2, &again), CU_FILE_HANDLE_ALREADY_REGISTERED)
      << "deregistering the stale handle left the new registration";
  std::memset(mem, 0x33, 16384);
  EXPECT_EQ(cuFileWrite(fresh, mem, 4096, 0, 0), 4096);
  std::vector<uint8_t> b2 = b;
  std::memset(b2.data(), 0x33, 4096);
  EXPECT_EQ(ReadWholeFile(dir_.File("b")), b2);
  EXPECT_EQ(ReadWholeFile(dir_.File("a")), a2);
  cuFileHandleDeregister(fresh);
  std::free(mem);
}

// ---- the same checks for batch entries -------------------------------------

CUfileIOParams_t Entry(CUfileHandle_t fh, bool write, void *buf, off_t off, size_t len) {
  CUfileIOParams_t p{};
  p.mode = CUFILE_BATCH;
  p.opcode = write ? CUFILE_WRITE : CUFILE_READ;
  p.fh = fh;
  p.u.batch.devPtr_base = buf;
  p.u.batch.size = len;
  p.u.batch.file_offset = off;
  return p;
}

// Runs entries as one batch of their own; their events in order.
std::vector<CUfileIOEvents_t> RunBatch(std::vector<CUfileIOParams_t> entries) {
  CUfileBatchHandle_t batch = nullptr;
  EXPECT_EQ(cuFileBatchIOSetUp(&batch, static_cast<unsigned>(entries.size())).err, CU_FILE_SUCCESS);
  std::vector<CUfileIOEvents_t> got = RunBatchParams(batch, std::move(entries));
  cuFileBatchIODestroy(batch);
  return got;
}

// In one batch, the old handle's entries run on its own file (with its own
// description) or fail (checked), and the new file's handle's entries run:
// the group's one check per handle is its own handle's.
TEST_P(ReusedDescriptor, BatchEntriesOfTheOldHandleNeverReachTheNewFile) {
  if (direct() && !DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  const std::vector<uint8_t> a = RandomBytes(65536, 7), b = RandomBytes(65536, 8);
  WriteWholeFile(dir_.File("a"), a);
  WriteWholeFile(dir_.File("b"), b);
  const int flags = O_RDWR | (direct() ? O_DIRECT : 0);
  const int fd = ::open(dir_.File("a").c_str(), flags);
  ASSERT_GE(fd, 0);
  CUfileHandle_t old = nullptr, fresh = nullptr;
  ASSERT_EQ(RegisterOld(fd, &old), CU_FILE_SUCCESS);
  ::close(fd);
  const int fd2 = ::open(dir_.File("b").c_str(), flags);
  ASSERT_EQ(fd2, fd) << "the lowest free number is reused";
  fds_.push_back(fd2);
  ASSERT_EQ(Register(fd2, &fresh), CU_FILE_SUCCESS);
  void *mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, 4096, 16 * 4096), 0);
  std::memset(mem, 0x5a, 16 * 4096);
  auto *buf = static_cast<char *>(mem);
  std::vector<CUfileIOParams_t> entries;
  for (int i = 0; i < 8; ++i) {
    const bool write = i % 2 == 0;
    entries.push_back(Entry(old, write, buf + i * 4096, i * 4096, 4096));
    entries.push_back(Entry(fresh, write, buf + (8 + i) * 4096, (8 + i) * 4096, 4096));
  }
  const std::vector<CUfileIOEvents_t> ev = RunBatch(entries);
  std::vector<uint8_t> a2 = a, b2 = b;
  for (size_t i = 0; i < ev.size(); ++i) {
    const bool from_old = entries[i].fh == old;
    if (from_old && !own()) {
      EXPECT_EQ(ev[i].status, CUFILE_FAILED) << "entry " << i;
      continue;
    }
    EXPECT_EQ(ev[i].status, CUFILE_COMPLETE) << "entry " << i;
    EXPECT_EQ(ev[i].ret, 4096u) << "entry " << i;
    const off_t at = entries[i].u.batch.file_offset;
    std::vector<uint8_t> &file = from_old ? a2 : b2;
    if (entries[i].opcode == CUFILE_WRITE)
      std::memset(file.data() + at, 0x5a, 4096);
    else
      EXPECT_EQ(std::memcmp(buf + (from_old ? i / 2 : 8 + i / 2) * 4096, file.data() + at, 4096), 0)
          << "entry " << i << " read its own file";
  }
  EXPECT_EQ(ReadWholeFile(dir_.File("a")), a2);
  EXPECT_EQ(ReadWholeFile(dir_.File("b")), b2);
  cuFileHandleDeregister(old);
  cuFileHandleDeregister(fresh);
  std::free(mem);
}

INSTANTIATE_TEST_SUITE_P(Modes, ReusedDescriptor,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto &i) {
                           return std::string(std::get<0>(i.param) ? "ODirect" : "Buffered") +
                                  (std::get<1>(i.param) ? "Own" : "Checked");
                         });

// Counts fstat calls on one descriptor (-1: on any).
class CountFstat : public SysOps {
 public:
  int fd = -1;
  std::atomic<int> calls{0};
  int Fstat(int f, struct stat *st) override {
    if (fd < 0 || f == fd) ++calls;
    return SysOps::Fstat(f, st);
  }
};

// A handle with its own description makes no descriptor check: a batch of
// it calls no fstat at all.
TEST_F(Contract, BatchOfAHandleWithItsOwnDescriptionChecksNothing) {
  constexpr int kEntries = 32;
  const std::vector<uint8_t> data = RandomBytes(kEntries * 4096, 9);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = Open("f", O_RDWR);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  std::vector<char> mem(kEntries * 4096, 0x11);
  std::vector<CUfileIOParams_t> reads;
  for (int i = 0; i < kEntries; ++i)
    reads.push_back(Entry(fh, false, mem.data() + i * 4096, i * 4096, 4096));
  CountFstat count;  // every descriptor
  {
    ScopedSysOps scope(&count);
    for (const CUfileIOEvents_t &e : RunBatch(reads)) EXPECT_EQ(e.ret, 4096u);
    EXPECT_EQ(cuFileRead(fh, mem.data(), 4096, 0, 0), 4096);
  }
  EXPECT_EQ(std::memcmp(mem.data(), data.data(), data.size()), 0);
  EXPECT_EQ(count.calls.load(), 0);
  cuFileHandleDeregister(fh);
}

// Where the fd is checked: O_APPEND refuses the writes of a batch and not its
// reads; the descriptor is checked once per handle and direction for each
// group of entries, not once per entry.
TEST_F(Contract, BatchChecksTheDescriptorOncePerGroupAndDirection) {
  constexpr int kEntries = 32;
  const std::vector<uint8_t> data = RandomBytes(kEntries * 4096, 9);
  WriteWholeFile(dir_.File("f"), data);
  const int fd = Open("f", O_RDWR);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(RegisterFdChecked(fd, &fh), CU_FILE_SUCCESS);
  std::vector<char> mem(kEntries * 4096, 0x11);
  std::vector<CUfileIOParams_t> reads, mixed;
  for (int i = 0; i < kEntries; ++i) {
    reads.push_back(Entry(fh, false, mem.data() + i * 4096, i * 4096, 4096));
    mixed.push_back(Entry(fh, i % 2 == 0, mem.data() + i * 4096, i * 4096, 4096));
  }
  CountFstat count;
  count.fd = fd;
  {
    ScopedSysOps scope(&count);
    for (const CUfileIOEvents_t &e : RunBatch(reads)) EXPECT_EQ(e.ret, 4096u);
  }
  EXPECT_EQ(std::memcmp(mem.data(), data.data(), data.size()), 0);
  EXPECT_GE(count.calls.load(), 1);
  EXPECT_LE(count.calls.load(), kEntries / 4) << "one check per group, not per entry";
  ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_APPEND), 0);
  const std::vector<CUfileIOEvents_t> ev = RunBatch(mixed);
  for (int i = 0; i < kEntries; ++i) {
    if (i % 2 == 0) {
      EXPECT_EQ(ev[i].status, CUFILE_FAILED) << "write " << i;
    } else {
      EXPECT_EQ(ev[i].status, CUFILE_COMPLETE) << "read " << i;
      EXPECT_EQ(ev[i].ret, 4096u) << "read " << i;
    }
  }
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), data) << "no write reached the file";
  cuFileHandleDeregister(fh);
}

}  // namespace
}  // namespace ufile::test
