// SPDX-License-Identifier: Apache-2.0
// cuFileHandleRegister / cuFileHandleDeregister and what I/O does with the
// handle: access modes (with and without O_DIRECT), the descriptors and
// flags that are refused, double registration, and I/O on handles that are
// not registered (NULL, forged, deregistered): a precise error, no crash, no
// byte touched.
#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr ssize_t kNotRegistered = -static_cast<ssize_t>(CU_FILE_HANDLE_NOT_REGISTERED);
const auto kForged = reinterpret_cast<CUfileHandle_t>(0x1234);

CUfileOpError Register(int fd, CUfileHandle_t *fh) {
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  return cuFileHandleRegister(fh, &d).err;
}

// 4 KiB-aligned heap memory (what O_DIRECT needs to avoid staging).
struct Aligned {
  // aligned_alloc wants a multiple of the alignment.
  explicit Aligned(size_t n)
      : size(n), p(static_cast<uint8_t *>(std::aligned_alloc(4096, (n + 4095) / 4096 * 4096))) {}
  ~Aligned() { std::free(p); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
  void Fill(const std::vector<uint8_t> &v) { std::memcpy(p, v.data(), size); }
  std::vector<uint8_t> Bytes() const { return {p, p + size}; }
  size_t size;
  uint8_t *p;
};

class HandleTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    CloseAll();
  }
  int Open(const std::string &path, int flags) {
    int fd = ::open(path.c_str(), flags, 0600);
    EXPECT_GE(fd, 0) << path << ": " << std::strerror(errno);
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }
  // A file of n random bytes; returns its contents.
  std::vector<uint8_t> MakeFile(const std::string &name, size_t n, uint64_t seed) {
    std::vector<uint8_t> data = RandomBytes(n, seed);
    WriteWholeFile(dir_.File(name), data);
    return data;
  }
  TempDir dir_;
  std::vector<int> fds_;
};

// ---- access modes x O_DIRECT ----------------------------------------------

struct Mode {
  int acc;
  bool direct;
};

// {mode, io_uring preferred}: the engine is chosen when the driver opens.
class AccessMode : public HandleTest, public ::testing::WithParamInterface<std::tuple<Mode, bool>> {
 protected:
  void SetUp() override {
    CloseAll();
    ASSERT_EQ(cuFileSetParameterBool(CUFILE_PARAM_PREFER_IO_URING, std::get<1>(GetParam())).err,
              CU_FILE_SUCCESS);
    ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  }
};

TEST_P(AccessMode, ReadsAndWritesWhatTheModeAllows) {
  const Mode m = std::get<0>(GetParam());
  if (m.direct && !DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  const size_t kFile = (1 << 20) + 333;
  std::vector<uint8_t> file = MakeFile("f", kFile, 1);
  const int fd = Open(dir_.File("f"), m.acc | (m.direct ? O_DIRECT : 0));
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  ASSERT_NE(fh, nullptr);
  const bool can_read = m.acc != O_WRONLY, can_write = m.acc != O_RDONLY;

  // An unaligned range into an unaligned place of pageable memory, and an
  // aligned range into aligned memory.
  std::vector<uint8_t> buf = RandomBytes(200000, 2);
  const std::vector<uint8_t> buf0 = buf;
  errno = 0;
  ssize_t n = cuFileRead(fh, buf.data(), 100000, 777, 5);
  if (can_read) {
    ASSERT_EQ(n, 100000);
    EXPECT_EQ(0, std::memcmp(buf.data() + 5, file.data() + 777, 100000));
    EXPECT_EQ(0, std::memcmp(buf.data(), buf0.data(), 5));
    EXPECT_EQ(0, std::memcmp(buf.data() + 100005, buf0.data() + 100005, buf.size() - 100005));
    Aligned al(65536);
    ASSERT_EQ(cuFileRead(fh, al.p, 65536, 8192, 0), 65536);
    EXPECT_EQ(0, std::memcmp(al.p, file.data() + 8192, 65536));
    // Short at end of file, 0 past it.
    EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, kFile - 100, 0), 100);
    EXPECT_EQ(0, std::memcmp(buf.data(), file.data() + kFile - 100, 100));
    EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, kFile + 10, 0), 0);
  } else {
    EXPECT_EQ(n, -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(buf, buf0);
  }

  const std::vector<uint8_t> patch = RandomBytes(70000, 3);
  errno = 0;
  n = cuFileWrite(fh, patch.data(), 70000, 12345, 0);
  if (can_write) {
    ASSERT_EQ(n, 70000);
    std::memcpy(file.data() + 12345, patch.data(), 70000);
    // Past end of file: the file grows, the gap reads as zeros.
    ASSERT_EQ(cuFileWrite(fh, patch.data(), 5000, kFile + 100, 17), 5000);
    file.resize(kFile + 100, 0);
    file.insert(file.end(), patch.begin() + 17, patch.begin() + 17 + 5000);
  } else {
    EXPECT_EQ(n, -1);
    EXPECT_EQ(errno, EBADF);
  }
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), file);
  cuFileHandleDeregister(fh);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, AccessMode,
    ::testing::Combine(::testing::Values(Mode{O_RDONLY, false}, Mode{O_WRONLY, false},
                                         Mode{O_RDWR, false}, Mode{O_RDONLY, true},
                                         Mode{O_WRONLY, true}, Mode{O_RDWR, true}),
                       ::testing::Bool()),
    [](const auto &p) {
      const Mode m = std::get<0>(p.param);
      const char *acc = m.acc == O_RDONLY ? "RdOnly" : m.acc == O_WRONLY ? "WrOnly" : "RdWr";
      return std::string(acc) + (m.direct ? "Direct" : "Buffered") +
             (std::get<1>(p.param) ? "Uring" : "Posix");
    });

// A read past end of file split into chunks read in parallel: the count
// ends at end of file and no byte past the request is touched. A write-only
// handle refuses it (-1, EBADF) and touches nothing.
TEST_P(AccessMode, ReadAcrossEndOfFileInParallelChunks) {
  const Mode m = std::get<0>(GetParam());
  if (m.direct && !DirectIoSupported(dir_.path()))
    GTEST_SKIP() << "O_DIRECT is not supported in " << dir_.path();
  const size_t kFile = (3 << 20) + 5, kAsk = 8 << 20;
  const std::vector<uint8_t> file = MakeFile("f", kFile, 5);
  const int fd = Open(dir_.File("f"), m.acc | (m.direct ? O_DIRECT : 0));
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  Aligned mem(kAsk + 8192);
  const std::vector<uint8_t> mem0 = RandomBytes(mem.size, 6);
  for (off_t off : {off_t{0}, off_t{777}, off_t{4096}}) {
    SCOPED_TRACE(::testing::Message() << "offset " << off);
    mem.Fill(mem0);
    if (m.acc == O_WRONLY) {
      errno = 0;
      EXPECT_EQ(cuFileRead(fh, mem.p, kAsk, off, 4096), -1);
      EXPECT_EQ(errno, EBADF);
      EXPECT_EQ(0, std::memcmp(mem.p, mem0.data(), mem.size)) << "a refused read wrote memory";
      continue;
    }
    const ssize_t want = static_cast<ssize_t>(kFile) - off;
    ASSERT_EQ(cuFileRead(fh, mem.p, kAsk, off, 4096), want);
    EXPECT_EQ(0, std::memcmp(mem.p + 4096, file.data() + off, want));
    EXPECT_EQ(0, std::memcmp(mem.p, mem0.data(), 4096));
    // Past the request nothing changes. Between end of file and the end of
    // the request, O_DIRECT reads may store zeros (the kernel fills holes
    // past end of file in the caller's memory); buffered reads do not.
    const size_t untouched_from = m.direct ? 4096 + kAsk : 4096 + want;
    EXPECT_EQ(0, std::memcmp(mem.p + untouched_from, mem0.data() + untouched_from,
                             mem.size - untouched_from))
        << "bytes past the request (or, buffered, past end of file) changed";
  }
  cuFileHandleDeregister(fh);
}

// ---- descriptors and flags that are refused -------------------------------

TEST_F(HandleTest, NonRegularFilesAreInvalidFileType) {
  CUfileHandle_t fh = kForged;
  EXPECT_EQ(Register(Open(dir_.path(), O_RDONLY | O_DIRECTORY), &fh), CU_FILE_INVALID_FILE_TYPE);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  fds_.insert(fds_.end(), {p[0], p[1]});
  EXPECT_EQ(Register(p[0], &fh), CU_FILE_INVALID_FILE_TYPE);
  EXPECT_EQ(Register(p[1], &fh), CU_FILE_INVALID_FILE_TYPE);
  int s[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
  fds_.insert(fds_.end(), {s[0], s[1]});
  EXPECT_EQ(Register(s[0], &fh), CU_FILE_INVALID_FILE_TYPE);
  EXPECT_EQ(Register(Open("/dev/null", O_RDWR), &fh), CU_FILE_INVALID_FILE_TYPE);
  EXPECT_EQ(fh, kForged) << "a refused registration must not write *fh";
}

TEST_F(HandleTest, ClosedAndNegativeDescriptorsAreInvalidValue) {
  MakeFile("f", 10, 1);
  const int fd = ::open(dir_.File("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::close(fd);
  CUfileHandle_t fh = kForged;
  EXPECT_EQ(Register(fd, &fh), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(Register(-1, &fh), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(Register(1 << 29, &fh), CU_FILE_INVALID_VALUE);
  EXPECT_EQ(fh, kForged);
}

TEST_F(HandleTest, AppendAndPathFlagsAreRefused) {
  MakeFile("f", 10, 1);
  CUfileHandle_t fh = kForged;
  EXPECT_EQ(Register(Open(dir_.File("f"), O_WRONLY | O_APPEND), &fh),
            CU_FILE_INVALID_FILE_OPEN_FLAG);
  EXPECT_EQ(Register(Open(dir_.File("f"), O_RDWR | O_APPEND), &fh), CU_FILE_INVALID_FILE_OPEN_FLAG);
  EXPECT_EQ(Register(Open(dir_.File("f"), O_PATH), &fh), CU_FILE_INVALID_FILE_OPEN_FLAG);
  EXPECT_EQ(fh, kForged);
}

TEST_F(HandleTest, MemfdIsARegularFile) {
  const int fd = memfd_create("ufile-handle-test", 0);
  ASSERT_GE(fd, 0);
  fds_.push_back(fd);
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  const std::vector<uint8_t> data = RandomBytes(10000, 4);
  ASSERT_EQ(cuFileWrite(fh, data.data(), data.size(), 3, 0), 10000);
  std::vector<uint8_t> back(10000);
  ASSERT_EQ(cuFileRead(fh, back.data(), back.size(), 3, 0), 10000);
  EXPECT_EQ(back, data);
  cuFileHandleDeregister(fh);
}

TEST_F(HandleTest, BadTypesAndNullArgumentsAreInvalidValue) {
  MakeFile("f", 10, 1);
  const int fd = Open(dir_.File("f"), O_RDWR);
  CUfileHandle_t fh = kForged;
  for (int type : {0, static_cast<int>(CU_FILE_HANDLE_TYPE_OPAQUE_WIN32), 4, 99, -1}) {
    CUfileDescr_t d{};
    std::memcpy(&d.type, &type, sizeof type);  // any int, as a C caller may store
    d.handle.fd = fd;
    EXPECT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_INVALID_VALUE) << "type " << type;
  }
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  EXPECT_EQ(cuFileHandleRegister(nullptr, &d).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(cuFileHandleRegister(&fh, nullptr).err, CU_FILE_INVALID_VALUE);
  EXPECT_EQ(fh, kForged);
  // None of that registered the descriptor.
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  cuFileHandleDeregister(fh);
}

// ---- registration lifetime -------------------------------------------------

TEST_F(HandleTest, SameDescriptorTwiceIsAlreadyRegisteredUntilDeregistered) {
  const std::vector<uint8_t> file = MakeFile("f", 4096, 1);
  const int fd = Open(dir_.File("f"), O_RDWR);
  CUfileHandle_t fh = nullptr, again = kForged;
  ASSERT_EQ(Register(fd, &fh), CU_FILE_SUCCESS);
  EXPECT_EQ(Register(fd, &again), CU_FILE_HANDLE_ALREADY_REGISTERED);
  EXPECT_EQ(again, kForged);
  // The first handle is intact; another descriptor of the same file is fine.
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, 0, 0), 4096);
  EXPECT_EQ(buf, file);
  const int dup_fd = ::dup(fd);
  fds_.push_back(dup_fd);
  CUfileHandle_t dup_fh = nullptr;
  ASSERT_EQ(Register(dup_fd, &dup_fh), CU_FILE_SUCCESS);
  EXPECT_NE(dup_fh, fh);
  cuFileHandleDeregister(fh);
  ASSERT_EQ(Register(fd, &again), CU_FILE_SUCCESS);
  EXPECT_NE(again, fh) << "a new registration must not reuse the old handle value";
  EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, 0, 0), kNotRegistered);
  EXPECT_EQ(cuFileRead(again, buf.data(), 4096, 0, 0), 4096);
  cuFileHandleDeregister(again);
  cuFileHandleDeregister(dup_fh);
}

TEST_F(HandleTest, IoOnUnregisteredHandlesTouchesNothing) {
  const std::vector<uint8_t> file = MakeFile("f", 8192, 1);
  const int fd = Open(dir_.File("f"), O_RDWR);
  CUfileHandle_t gone = nullptr;
  ASSERT_EQ(Register(fd, &gone), CU_FILE_SUCCESS);
  cuFileHandleDeregister(gone);
  std::vector<uint8_t> buf = RandomBytes(8192, 9);
  const std::vector<uint8_t> buf0 = buf;
  const CUfileHandle_t bad[] = {gone, nullptr, kForged, reinterpret_cast<CUfileHandle_t>(~0ull),
                                reinterpret_cast<CUfileHandle_t>(buf.data())};
  for (CUfileHandle_t fh : bad) {
    SCOPED_TRACE(fh);
    EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, 0, 0), kNotRegistered);
    EXPECT_EQ(cuFileWrite(fh, buf.data(), 4096, 0, 0), kNotRegistered);
    EXPECT_EQ(cuFileRead(fh, buf.data(), 0, 0, 0), kNotRegistered);
  }
  EXPECT_EQ(buf, buf0);
  EXPECT_EQ(ReadWholeFile(dir_.File("f")), file);
}

TEST_F(HandleTest, DeregisteringTwiceOrBogusHandlesIsHarmless) {
  const std::vector<uint8_t> file = MakeFile("f", 4096, 1);
  const int fd1 = Open(dir_.File("f"), O_RDONLY), fd2 = Open(dir_.File("f"), O_RDONLY);
  CUfileHandle_t a = nullptr, b = nullptr;
  ASSERT_EQ(Register(fd1, &a), CU_FILE_SUCCESS);
  ASSERT_EQ(Register(fd2, &b), CU_FILE_SUCCESS);
  cuFileHandleDeregister(a);
  cuFileHandleDeregister(a);
  cuFileHandleDeregister(nullptr);
  cuFileHandleDeregister(kForged);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(cuFileRead(b, buf.data(), 4096, 0, 0), 4096);
  EXPECT_EQ(buf, file);
  cuFileHandleDeregister(b);
}

// The caller's bug, not a crash: with its own description the handle goes
// on with the registered file; with its fd checked, I/O is -1/EBADF.
TEST_F(HandleTest, DescriptorClosedBehindTheHandle) {
  const std::vector<uint8_t> file = MakeFile("f", 4096, 1);
  for (const bool own : {true, false}) {
    SCOPED_TRACE(own ? "own description" : "fd checked");
    const int fd = ::open(dir_.File("f").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    CUfileHandle_t fh = nullptr;
    ASSERT_EQ(own ? Register(fd, &fh) : RegisterFdChecked(fd, &fh), CU_FILE_SUCCESS);
    ::close(fd);
    std::vector<uint8_t> buf(4096);
    errno = 0;
    EXPECT_EQ(cuFileRead(fh, buf.data(), 4096, 0, 0), own ? 4096 : -1);
    EXPECT_EQ(errno, own ? 0 : EBADF);
    if (own) {
      EXPECT_EQ(buf, file);
    }
    errno = 0;
    EXPECT_EQ(cuFileWrite(fh, buf.data(), 4096, 0, 0), own ? 4096 : -1);
    EXPECT_EQ(errno, own ? 0 : EBADF);
    cuFileHandleDeregister(fh);
    EXPECT_EQ(ReadWholeFile(dir_.File("f")), file);
  }
}

TEST_F(HandleTest, HandleOfAClosedDriverSessionIsNotRegistered) {
  MakeFile("f", 4096, 1);
  const int fd = Open(dir_.File("f"), O_RDWR);
  ASSERT_EQ(cuFileDriverOpen().err, CU_FILE_SUCCESS);
  CUfileHandle_t old = nullptr;
  ASSERT_EQ(Register(fd, &old), CU_FILE_SUCCESS);
  ASSERT_EQ(cuFileDriverClose().err, CU_FILE_SUCCESS);
  std::vector<uint8_t> buf(4096);
  EXPECT_EQ(cuFileRead(old, buf.data(), 4096, 0, 0), kNotRegistered);
  // The session's registrations are gone with it: the descriptor registers anew.
  CUfileHandle_t fresh = nullptr;
  ASSERT_EQ(Register(fd, &fresh), CU_FILE_SUCCESS);
  EXPECT_NE(fresh, old);
  EXPECT_EQ(cuFileRead(fresh, buf.data(), 4096, 0, 0), 4096);
  cuFileHandleDeregister(old);  // harmless
  EXPECT_EQ(cuFileRead(fresh, buf.data(), 4096, 0, 0), 4096);
  cuFileHandleDeregister(fresh);
}

}  // namespace
}  // namespace ufile::test
