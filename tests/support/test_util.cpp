// SPDX-License-Identifier: Apache-2.0
#include "support/test_util.h"

#include <cufile.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "support/faulty_sys_ops.h"
#include "sys/sys_ops.h"

namespace ufile::test {

TempDir::TempDir() {
  const char *base = std::getenv("UFILE_TEST_TMPDIR");
  std::string root = base && *base ? base : "/tmp";
  std::filesystem::create_directories(root);
  std::string tmpl = root + "/ufile-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed in " + root);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  // splitmix64: one word of state, so the sanitizer builds fill megabytes
  // quickly (std::mt19937_64 touches its 312-word state for every word).
  std::vector<uint8_t> out(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&x] {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = next();
    __builtin_memcpy(&out[i], &v, 8);
  }
  for (; i < n; ++i) out[i] = static_cast<uint8_t>(next());
  return out;
}

void WriteWholeFile(const std::string &path, const std::vector<uint8_t> &data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<uint8_t> ReadWholeFile(const std::string &path) {
  // One pread loop, not a stream iterator: byte by byte was most of some
  // tests' time under TSan.
  std::vector<uint8_t> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t r = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    out.resize(done);
  }
  ::close(fd);
  return out;
}

void WriteTextFile(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

ScopedEnv::ScopedEnv(const char *name, std::optional<std::string> value) : name_(name) {
  if (const char *old = std::getenv(name)) old_ = old;
  if (value)
    setenv(name, value->c_str(), 1);
  else
    unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (old_)
    setenv(name_.c_str(), old_->c_str(), 1);
  else
    unsetenv(name_.c_str());
}

size_t ResidentPages(int fd, size_t len, off_t off) {
  void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, off);
  if (m == MAP_FAILED) return SIZE_MAX;
  std::vector<unsigned char> vec((len + 4095) / 4096);
  size_t n = SIZE_MAX;
  if (mincore(m, len, vec.data()) == 0) {
    n = 0;
    for (unsigned char v : vec) n += v & 1;
  }
  munmap(m, len);
  return n;
}

bool DirectIoSupported(const std::string &dir) {
  std::string path = dir + "/.odirect-probe";
  int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0600);
  if (fd < 0) return false;
  ::close(fd);
  ::unlink(path.c_str());
  return true;
}

size_t OpenFdCount() {
  size_t n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  while (dirent *e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the directory's own descriptor
}

CUfileOpError RegisterFd(int fd, CUfileHandle_t *fh) {
  CUfileDescr_t d{};
  d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
  d.handle.fd = fd;
  return cuFileHandleRegister(fh, &d).err;
}

FileId::FileId(int fd) {
  struct stat st {};
  valid_ = ::fstat(fd, &st) == 0;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

bool FileId::Names(int fd) const {
  struct stat st {};
  return valid_ && ::fstat(fd, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

CUfileOpError RegisterFdChecked(int fd, CUfileHandle_t *fh) {
  FaultySysOps no_open;
  no_open.open_err = EMFILE;
  ScopedSysOps scope(&no_open);
  return RegisterFd(fd, fh);
}

void CloseAll() {
  for (int i = 0; i < 64 && cuFileUseCount() > 0; ++i) cuFileDriverClose();
}

}  // namespace ufile::test
