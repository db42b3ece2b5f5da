// SPDX-License-Identifier: Apache-2.0
#include "support/io_cases.h"

#include <cufile.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "support/test_util.h"

namespace ufile::test {
namespace {

constexpr size_t kGuard = 4096;

const char *AlignName(Alignment a) {
  switch (a) {
    case Alignment::kAligned:
      return "aligned";
    case Alignment::kFileOffset:
      return "unaligned_file_offset";
    case Alignment::kSize:
      return "unaligned_size";
    case Alignment::kBufferOffset:
      return "unaligned_buffer_offset";
  }
  return "?";
}

// Index of the first difference, or -1.
long FirstDiff(const uint8_t *a, const uint8_t *b, size_t n) {
  if (n == 0 || std::memcmp(a, b, n) == 0) return -1;  // fast under the sanitizers
  auto m = std::mismatch(a, a + n, b);
  return m.first == a + n ? -1 : static_cast<long>(m.first - a);
}

struct Layout {
  off_t file_off;
  size_t size;
  size_t buf_off;
  size_t file_len;
  size_t mem_len;
};

Layout LayoutOf(const IoCase &c) {
  Layout l;
  l.file_off = c.align == Alignment::kFileOffset ? 8192 + 123 : 8192;
  l.size = c.align == Alignment::kSize ? c.size + 13 : c.size;
  l.buf_off = c.align == Alignment::kBufferOffset ? 77 : 0;
  l.file_len = static_cast<size_t>(l.file_off) + l.size + 2 * kGuard + 5;
  l.mem_len = l.buf_off + l.size + kGuard;
  return l;
}

void CheckWrite(const std::string &path, const Layout &l, const std::vector<uint8_t> &before,
                const std::vector<uint8_t> &src, CUfileHandle_t fh, TestMemory &mem) {
  mem.Upload(src);
  ssize_t n = cuFileWrite(fh, mem.ptr(), l.size, l.file_off, static_cast<off_t>(l.buf_off));
  ASSERT_EQ(n, static_cast<ssize_t>(l.size)) << "cuFileWrite errno " << errno;
  std::vector<uint8_t> after = ReadWholeFile(path);  // buffered, unlike the handle's fd
  ASSERT_EQ(after.size(), l.file_len) << "file size changed";
  const size_t off = static_cast<size_t>(l.file_off);
  EXPECT_EQ(FirstDiff(after.data(), before.data(), off), -1) << "bytes before the range changed";
  EXPECT_EQ(FirstDiff(after.data() + off, src.data() + l.buf_off, l.size), -1)
      << "written bytes differ";
  EXPECT_EQ(FirstDiff(after.data() + off + l.size, before.data() + off + l.size,
                      l.file_len - off - l.size),
            -1)
      << "bytes after the range changed";
}

void CheckRead(const Layout &l, const std::vector<uint8_t> &file,
               const std::vector<uint8_t> &sentinel, CUfileHandle_t fh, TestMemory &mem) {
  mem.Upload(sentinel);
  ssize_t n = cuFileRead(fh, mem.ptr(), l.size, l.file_off, static_cast<off_t>(l.buf_off));
  ASSERT_EQ(n, static_cast<ssize_t>(l.size)) << "cuFileRead errno " << errno;
  std::vector<uint8_t> got = mem.Download();
  EXPECT_EQ(FirstDiff(got.data(), sentinel.data(), l.buf_off), -1) << "buffer head changed";
  EXPECT_EQ(FirstDiff(got.data() + l.buf_off, file.data() + l.file_off, l.size), -1)
      << "read bytes differ";
  const size_t tail = l.buf_off + l.size;
  EXPECT_EQ(FirstDiff(got.data() + tail, sentinel.data() + tail, l.mem_len - tail), -1)
      << "buffer tail changed";
}

}  // namespace

std::string CaseName(const IoCase &c) {
  return MemoryKindName(c.mem) + "_" + AlignName(c.align) + (c.direct ? "_odirect" : "_buffered") +
         "_" + std::to_string(c.size) + (c.registered ? "_registered" : "");
}

std::vector<IoCase> CrossProduct(const std::vector<MemoryKind> &kinds,
                                 const std::vector<size_t> &sizes) {
  std::vector<IoCase> out;
  for (MemoryKind k : kinds)
    for (Alignment a : {Alignment::kAligned, Alignment::kFileOffset, Alignment::kSize,
                        Alignment::kBufferOffset})
      for (bool direct : {false, true})
        for (size_t s : sizes) {
          out.push_back({k, a, direct, s, false});
          if (s == (1u << 20)) out.push_back({k, a, direct, s, true});
        }
  return out;
}

void RunIoCase(const IoCase &c, const std::string &dir) {
  if (MemoryKindNeedsGpu(c.mem) && !GpuAvailable())
    GTEST_SKIP() << "no GPU: " << GpuUnavailableReason();
  if (c.direct && !DirectIoSupported(dir)) GTEST_SKIP() << "O_DIRECT unsupported in " << dir;
  const Layout l = LayoutOf(c);
  const uint64_t seed = std::hash<std::string>()(CaseName(c));
  const std::string path = dir + "/" + CaseName(c);
  const std::vector<uint8_t> before = RandomBytes(l.file_len, seed);
  WriteWholeFile(path, before);
  int fd = open(path.c_str(), O_RDWR | (c.direct ? O_DIRECT : 0));
  ASSERT_GE(fd, 0);
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  ASSERT_EQ(cuFileHandleRegister(&fh, &d).err, CU_FILE_SUCCESS);
  std::unique_ptr<TestMemory> mem = AllocateMemory(c.mem, l.mem_len);
  ASSERT_TRUE(mem);
  if (c.registered) {
    ASSERT_EQ(cuFileBufRegister(mem->ptr(), l.mem_len, 0).err, CU_FILE_SUCCESS);
  }

  const std::vector<uint8_t> src = RandomBytes(l.mem_len, seed + 1);
  CheckWrite(path, l, before, src, fh, *mem);
  std::vector<uint8_t> file = before;
  std::copy_n(src.begin() + static_cast<long>(l.buf_off), l.size, file.begin() + l.file_off);
  CheckRead(l, file, RandomBytes(l.mem_len, seed + 2), fh, *mem);

  if (c.registered) {
    EXPECT_EQ(cuFileBufDeregister(mem->ptr()).err, CU_FILE_SUCCESS);
  }
  cuFileHandleDeregister(fh);
  close(fd);
  unlink(path.c_str());
}

}  // namespace ufile::test
