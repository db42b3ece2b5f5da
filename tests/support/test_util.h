// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests: temporary directories, random data, scoped
// environment variables, GPU presence.
#pragma once

#include <cufile.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ufile::test {

// A fresh directory under $UFILE_TEST_TMPDIR (else /tmp), removed with its
// contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string File(const std::string &name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Deterministic pseudo-random bytes (never zeros-only).
std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed);
void WriteWholeFile(const std::string &path, const std::vector<uint8_t> &data);
std::vector<uint8_t> ReadWholeFile(const std::string &path);
void WriteTextFile(const std::string &path, const std::string &text);

// Sets (or unsets, with nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, std::optional<std::string> value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Whether O_DIRECT opens work in dir (tmpfs refuses them).
bool DirectIoSupported(const std::string &dir);

// Pages of fd's [off, off + len) in the page cache (mincore; off
// page-aligned); SIZE_MAX when the file cannot be mapped.
size_t ResidentPages(int fd, size_t len, off_t off = 0);

// Descriptors this process has open (entries of /proc/self/fd).
size_t OpenFdCount();

// Registers fd as a cuFile handle (an opaque descriptor); what
// cuFileHandleRegister returned.
CUfileOpError RegisterFd(int fd, CUfileHandle_t *fh);
// The same with ufile's reopening of fd refused (as with no descriptors
// left): the handle then does its I/O on fd and checks fd before each I/O.
CUfileOpError RegisterFdChecked(int fd, CUfileHandle_t *fh);

// The file a descriptor names (device and inode): lets a fault seam match
// ufile's own descriptions of a registered file as well as the caller's fd.
class FileId {
 public:
  explicit FileId(int fd);
  // Whether fd names the same file (false for a descriptor not open).
  bool Names(int fd) const;

 private:
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool valid_ = false;
};

// Closes the driver however many times it was opened, so that parameters a
// test stages apply at its next open (bounded: a broken count cannot hang).
void CloseAll();

}  // namespace ufile::test
